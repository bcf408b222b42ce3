//! `ralph import`: real plans of other Ralphs (tests/fixtures/import, each
//! folder one plan as it was found) imported into a project with the real
//! `br`, then checked as a user would: the counts ralph says, `ralph
//! verify-sync` and `ralph doctor`'s finish check.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::{TestEnv, repo_root};

/// A git project with br set up, the fixture folder copied in as `plan/`.
fn project_with(fixture: &str, br: bool) -> TestEnv {
    let env = TestEnv::new();
    env.git_init();
    if br {
        env.br(&["init"]);
    }
    copy_dir(
        &repo_root().join("tests/fixtures/import").join(fixture),
        &env.project.join("plan"),
    );
    env
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn finish_check(env: &TestEnv) -> Value {
    // Other checks (the agents, the hook) may fail here: only this one counts.
    let out = env
        .ralph()
        .env("PATH", env.path_with_br())
        .args(["doctor", "--json"])
        .assert()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "finish")
        .cloned()
        .unwrap()
}

/// Each real plan: its file, and the steps, checked steps and headings
/// the spec must get.
const PLANS: [(&str, &str, usize, usize, usize); 11] = [
    ("panel-incidentes", "prd.json", 5, 1, 0),
    ("xrpl-cli-ng", "prd.json", 2, 2, 0),
    ("feff10-rs", "prd.json", 45, 11, 0),
    ("Brighter", "prd.json", 14, 7, 0),
    ("snarktank-ralph", "prd.json.example", 4, 0, 0),
    ("WKA_Verwaltung", "fix_plan.md", 60, 23, 13),
    ("taofen-memory", "@fix_plan.md", 24, 17, 9),
    ("nanobot", "fix_plan.md", 54, 0, 8),
    ("Claudeman", "@fix_plan.md", 22, 20, 7),
    ("beacon", "@fix_plan.md", 18, 3, 6),
    ("world-wide-webb", "@fix_plan.md", 159, 141, 12),
];

#[test]
fn real_plans_import_with_their_steps_checked_and_tasks_in_br() {
    for (fixture, file, steps, checked, headings) in PLANS {
        let env = project_with(fixture, true);
        let out = env
            .ralph()
            .env("PATH", env.path_with_br())
            .args(["import", &format!("plan/{file}"), "--yes"])
            .stdout_with(0);
        let under = match headings {
            0 => String::new(),
            n => format!(" under {n} headings"),
        };
        let said = format!(".ralph/spec.md: {steps} steps, {checked} checked{under} (new)");
        assert!(out.contains(&said), "{fixture}: {said}\n{out}");
        assert!(
            out.contains(&format!(
                "br: {steps} tasks to make, {checked} of them closed"
            )),
            "{fixture}: {out}"
        );
        env.ralph()
            .env("PATH", env.path_with_br())
            .arg("verify-sync")
            .prints(
                0,
                &format!(
                    ".ralph/spec.md is in sync with br: {steps} steps, {checked}/{steps} steps done.\n"
                ),
                "",
            );
        let finish = finish_check(&env);
        assert_eq!(finish["ok"], true, "{fixture}: {finish}");
        // What a loop needs is there, the plan's or init's templates; the
        // map within its budget (a large plan's spec may not be).
        let project = env.doctor_check("project");
        let detail = project["detail"].as_str().unwrap_or_default();
        assert!(
            !detail.contains("missing") && !detail.contains("readme.md ~"),
            "{fixture}: {project}"
        );
        // A spec over its budget is said as the import ends.
        assert_eq!(
            detail.contains("spec.md ~"),
            out.contains("note: .ralph/spec.md is ~"),
            "{fixture}: {project}\n{out}"
        );
        if fixture == "world-wide-webb" {
            assert!(out.contains("note: .ralph/spec.md is ~"), "{out}");
        }
        // The tasks are the steps: titles with the source's ids, the
        // criteria as descriptions, done ones closed.
        let list: Value =
            serde_json::from_str(&env.br(&["list", "--all", "--limit", "0", "--json"])).unwrap();
        let issues = list["issues"].as_array().unwrap();
        assert_eq!(issues.len(), steps, "{fixture}");
        let closed = issues.iter().filter(|i| i["status"] == "closed").count();
        assert_eq!(closed, checked, "{fixture}");
    }
}

#[test]
fn a_story_keeps_its_id_criteria_and_the_progress_log_its_patterns() {
    let env = project_with("panel-incidentes", true);
    env.ralph()
        .env("PATH", env.path_with_br())
        .args(["import", "plan/prd.json", "--yes"])
        .stdout_with(0);
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    let first = spec.lines().find(|l| l.starts_with("- [x] **1**")).unwrap();
    assert!(
        first
            .starts_with("- [x] **1** US-001 Crear componente reutilizable SidePreviewPanel.jsx ["),
        "{spec}"
    );
    let id = first.rsplit('[').next().unwrap().trim_end_matches(']');
    let shown = env.br(&["show", id]);
    assert!(
        shown.contains("Acceptance criteria:")
            && shown.contains("cd frontend && npm run lint pasa"),
        "{shown}"
    );
    let learnings = fs::read_to_string(env.project.join(".ralph/learnings.md")).unwrap();
    assert!(
        learnings.starts_with("# Learnings")
            && learnings.contains("## Imported from plan/progress.txt")
            && learnings.contains("Componentes en carpeta propia"),
        "{learnings}"
    );
    let progress = fs::read_to_string(env.project.join(".ralph/progress.md")).unwrap();
    assert!(
        progress.contains("### US-001") && !progress.contains("Componentes en carpeta propia"),
        "{progress}"
    );
    let readme = fs::read_to_string(env.project.join(".ralph/readme.md")).unwrap();
    assert!(
        readme.contains(
            "| rules.md | `.ralph/rules.md` | the project's rules, imported from plan/AGENT.md"
        ),
        "{readme}"
    );
    let rules = fs::read_to_string(env.project.join(".ralph/rules.md")).unwrap();
    assert!(
        rules.starts_with("# Project rules\n\nImported by `ralph import` from plan/AGENT.md.")
            && rules.contains("Comandos de validación"),
        "{rules}"
    );
}

#[test]
fn without_a_tracker_the_details_stay_under_the_steps() {
    let env = project_with("nanobot", false);
    env.ralph()
        .args(["import", "plan/fix_plan.md", "--yes"])
        .stdout_with(0);
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("## Phase 1: Foundation — Conversation Store\n\n- [ ] **1** HIGH: Create `nanobot/memory/__init__.py` with module exports\n"),
        "{spec}"
    );
    env.ralph().arg("verify-sync").prints(
        0,
        ".ralph/spec.md names no tracker tasks; nothing to compare (0/54 steps done).\n",
        "",
    );
    let readme = fs::read_to_string(env.project.join(".ralph/readme.md")).unwrap();
    let rules = fs::read_to_string(env.project.join(".ralph/rules.md")).unwrap();
    assert!(
        readme.contains("| pib.md | `plan/specs/pib.md` |")
            && rules.contains("### Project Context")
            && !rules.contains("RALPH_STATUS"),
        "{readme}\n{rules}"
    );
    assert_eq!(finish_check(&env)["ok"], true);
    // No .beads, no task named: doctor has no tracker to ask for.
    let tracker = env.doctor_check("tracker");
    assert_eq!(tracker["ok"], true, "{tracker}");
}

#[test]
fn a_malformed_plan_is_refused_with_its_place_and_nothing_written() {
    let env = project_with("xrpl-cli-ng", true);
    let bad = fs::read_to_string(env.project.join("plan/prd.json"))
        .unwrap()
        .replacen("\"passes\": true", "\"passes\": \"yes\"", 1);
    fs::write(env.project.join("plan/prd.json"), bad).unwrap();
    env.ralph()
        .env("PATH", env.path_with_br())
        .args(["import", "plan/prd.json", "--yes"])
        .prints(
            1,
            "",
            "ralph import: plan/prd.json: userStories[0].passes: \"yes\" is not true or false; nothing imported\n",
        );
    fs::write(
        env.project.join("plan/prd.json"),
        "{\"userStories\": [\n  {\"title\": \"a\",}\n]}",
    )
    .unwrap();
    env.ralph()
        .env("PATH", env.path_with_br())
        .args(["import", "plan/prd.json", "--yes"])
        .prints(
            1,
            "",
            "ralph import: plan/prd.json:2:17: not valid JSON (trailing comma at line 2 column 17); nothing imported\n",
        );
    fs::write(
        env.project.join("plan/fix_plan.md"),
        "## High\n- [ ] fine\n-[x] glued\n",
    )
    .unwrap();
    env.ralph()
        .args(["import", "plan/fix_plan.md", "--yes"])
        .prints(
            1,
            "",
            "ralph import: plan/fix_plan.md:3: checkbox without a space after the bullet (write `- [ ]`); nothing imported\n",
        );
    assert!(!env.project.join(".ralph").exists());
    let list: Value =
        serde_json::from_str(&env.br(&["list", "--all", "--limit", "0", "--json"])).unwrap();
    assert_eq!(list["issues"].as_array().map(Vec::len), Some(0), "{list}");
}

#[test]
fn it_asks_first_and_keeps_your_own_files() {
    let env = project_with("Claudeman", false);
    env.ralph().arg("init").stdout_with(0);
    // Nobody to ask: nothing written.
    let err = env
        .ralph()
        .args(["import", "plan/@fix_plan.md"])
        .stderr_with(2);
    assert_eq!(
        err,
        "ralph import: nothing written: nobody to ask here (no terminal); read the plan above and run `ralph import plan/@fix_plan.md --yes`\n"
    );
    let template = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(template.contains("Describe the first step here"));
    // Over init's templates: yes.
    let out = env
        .ralph()
        .args(["import", "plan/@fix_plan.md", "--yes"])
        .stdout_with(0);
    assert!(
        out.contains(
            ".ralph/spec.md: 22 steps, 20 checked under 7 headings (replaces ralph init's template)"
        ),
        "{out}"
    );
    // Over the spec it wrote (now yours): not without --force.
    let err = env
        .ralph()
        .args(["import", "plan/@fix_plan.md", "--yes"])
        .stderr_with(1);
    assert!(
        err.starts_with("ralph import: nothing written: ")
            && err.contains(".ralph/spec.md")
            && err.ends_with(" are your own, not ralph init's template (--force replaces them)\n"),
        "{err}"
    );
    env.ralph()
        .args(["import", "plan/@fix_plan.md", "--yes", "--force"])
        .stdout_with(0);
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [x] **1** P0-001 Add stuck-state detection to RespawnController"),
        "{spec}"
    );
}

#[test]
fn what_is_no_plan_is_not_recognised() {
    let env = project_with("nanobot", false);
    env.ralph()
        .args(["import", "plan/AGENT.md", "--yes"])
        .prints(
            2,
            "",
            "ralph import: plan/AGENT.md is neither a snarktank prd.json (a JSON object with userStories) nor a ralph-claude-code fix plan (Markdown with `- [ ]` items)\n",
        );
    env.ralph().args(["import", "nowhere.json"]).prints(
        2,
        "",
        "ralph import: nowhere.json: no such file or folder\n",
    );
}

/// Imported again (`--force` over the spec it wrote), a plan's tasks are
/// the ones already there under their titles: none made twice, the done
/// ones closed once, and `verify-sync` agrees.
#[test]
fn imported_again_the_tasks_there_are_reused_not_made_twice() {
    let env = project_with("panel-incidentes", true);
    let import = |extra: &[&str]| {
        env.ralph()
            .env("PATH", env.path_with_br())
            .args(["import", "plan/prd.json", "--yes"])
            .args(extra)
            .stdout_with(0)
    };
    let first = import(&[]);
    assert!(first.contains("made 5 tasks in br (1 closed)"), "{first}");
    let again = import(&["--force"]);
    // The preview says what it will do: no task made again.
    assert!(
        again.contains(
            "br: 0 tasks to make, 5 there already under their titles (not made again), 0 to close"
        ),
        "{again}"
    );
    assert!(
        again.contains("made 0 tasks in br, 5 tasks there already under their titles (1 closed)"),
        "{again}"
    );
    let list: Value =
        serde_json::from_str(&env.br(&["list", "--all", "--limit", "0", "--json"])).unwrap();
    assert_eq!(list["issues"].as_array().unwrap().len(), 5, "{list}");
    env.ralph()
        .env("PATH", env.path_with_br())
        .arg("verify-sync")
        .prints(
            0,
            ".ralph/spec.md is in sync with br: 5 steps, 1/5 steps done.\n",
            "",
        );
}

/// A real one-line `@fix_plan.md` (`[ ] Get started`, a box with no list
/// bullet) is the step its author meant, said so; the tracker's files the
/// import changed are named among what to commit.
#[test]
fn a_box_without_a_bullet_is_a_step_and_beads_is_named_to_commit() {
    let env = TestEnv::new();
    env.git_init();
    env.br(&["init"]);
    fs::create_dir_all(env.project.join("plan")).unwrap();
    fs::write(env.project.join("plan/@fix_plan.md"), "[ ] Get started").unwrap();
    let out = env
        .ralph()
        .env("PATH", env.path_with_br())
        .args(["import", "plan/@fix_plan.md", "--yes"])
        .stdout_with(0);
    assert!(
        out.contains("  plan/@fix_plan.md line 1: a box without a list bullet, taken as a step\n"),
        "{out}"
    );
    assert!(
        out.contains("br: 1 task to make, 0 of them closed"),
        "{out}"
    );
    assert!(
        out.contains("Next: `ralph doctor` (can a loop here finish?), commit .ralph/ and .beads/, then `ralph loop`."),
        "{out}"
    );
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(spec.contains("\n- [ ] **1** Get started ["), "{spec}");
    env.ralph()
        .env("PATH", env.path_with_br())
        .arg("verify-sync")
        .prints(
            0,
            ".ralph/spec.md is in sync with br: 1 steps, 0/1 steps done.\n",
            "",
        );
}

/// Without a tracker, a story's acceptance criteria are written under
/// their step, as the list under its "Acceptance criteria:" line.
#[test]
fn without_a_tracker_the_criteria_are_nested_under_their_step() {
    let env = project_with("panel-incidentes", false);
    env.ralph()
        .args(["import", "plan/prd.json", "--yes"])
        .stdout_with(0);
    let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    assert!(
        spec.contains("- [x] **1** US-001 Crear componente reutilizable SidePreviewPanel.jsx\n  - Como desarrollador, quiero un componente SidePreviewPanel reutilizable para mostrar el preview de un incidente y poder montarlo en cualquier lista.\n  - Acceptance criteria:\n    - Existe frontend/src/components/SidePreviewPanel/SidePreviewPanel.jsx con export default\n"),
        "{spec}"
    );
    assert!(
        spec.contains("    - cd frontend && npm run build pasa\n  - Notes:\n    - Creados "),
        "{spec}"
    );
    env.ralph().arg("verify-sync").prints(
        0,
        ".ralph/spec.md names no tracker tasks; nothing to compare (1/5 steps done).\n",
        "",
    );
}

/// An item's id written in brackets (`[API-1]`) is the author's text, kept
/// as written in the step and its task, never read as ralph's task.
#[test]
fn an_id_in_brackets_is_kept_as_written() {
    for br in [true, false] {
        let env = TestEnv::new();
        env.git_init();
        if br {
            env.br(&["init"]);
        }
        fs::create_dir_all(env.project.join("plan")).unwrap();
        fs::write(
            env.project.join("plan/fix_plan.md"),
            "## API\n- [ ] Build the endpoint [API-1]\n",
        )
        .unwrap();
        env.ralph()
            .env("PATH", env.path_with_br())
            .args(["import", "plan/fix_plan.md", "--yes"])
            .stdout_with(0);
        let spec = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
        let verify = env
            .ralph()
            .env("PATH", env.path_with_br())
            .arg("verify-sync")
            .stdout_with(0);
        if br {
            assert!(
                spec.contains("- [ ] **1** Build the endpoint [API-1] ["),
                "{spec}"
            );
            let list: Value = serde_json::from_str(&env.br(&["list", "--json"])).unwrap();
            assert_eq!(
                list["issues"][0]["title"], "Build the endpoint [API-1]",
                "{list}"
            );
            assert!(verify.contains("in sync with br: 1 steps"), "{verify}");
        } else {
            assert!(
                spec.contains("- [ ] **1** Build the endpoint [API-1].\n"),
                "{spec}"
            );
            assert!(verify.contains("names no tracker tasks"), "{verify}");
        }
    }
}
