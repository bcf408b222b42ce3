//! Sentinels, status and `verify-sync`, against the real beads tracker `br`.

use std::fs;

use predicates::prelude::*;
use serde_json::Value;

use crate::support::*;
use crate::support::{self, TestEnv};

/// `verify-sync --json`'s findings as (kind, line).
fn finding_kinds(v: &Value) -> Vec<(&str, Value)> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["line"].clone()))
        .collect()
}

fn write_spec(env: &TestEnv, text: &str) {
    fs::create_dir_all(env.project.join(".ralph")).unwrap();
    fs::write(env.project.join(".ralph/spec.md"), text).unwrap();
}

fn spec(epic: &str, t: &[String], boxes: [char; 3]) -> String {
    format!(
        "# Spec\n\nEpic: [{epic}]\n\n- [{}] **1.1** First [{}]\n- [{}] **1.2** Second [{}]\n- [{}] **1.R** Review [{}]\n",
        boxes[0], t[0], boxes[1], t[1], boxes[2], t[2]
    )
}

#[test]
fn verify_sync_against_real_br() {
    let env = TestEnv::new();
    let (epic, t) = workspace(&env);
    let path = env.path_with_br();
    let verify = || env.ralph().env("PATH", &path).arg("verify-sync");

    env.br(&["close", &t[0]]);
    write_spec(&env, &spec(&epic, &t, ['x', ' ', ' ']));
    verify().prints(
        0,
        ".ralph/spec.md is in sync with br: 3 steps, 1/3 steps done.\n",
        "",
    );
    // From a subfolder holding another beads workspace: still the project's.
    let sub = env.project.join("vendor/lib");
    fs::create_dir_all(&sub).unwrap();
    let out = env
        .command(support::br_bin())
        .current_dir(&sub)
        .arg("init")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    verify()
        .current_dir(&sub)
        .assert()
        .code(0)
        .stdout(predicate::str::contains("1/3 steps done"));

    // A task of no step, outside the epic: listed, as information (in
    // sync still, exit 0); once closed, no longer.
    let loose = env.br(&["create", "Loose end", "--type", "task", "--silent"]);
    let loose = loose.trim();
    verify().prints(
        0,
        &format!(
            ".ralph/spec.md is in sync with br: 3 steps, 1/3 steps done.\n\
             1 open task in br no step names (not counted against the sync: a step's line names its task as [id] at its end; or close the task if it is not this spec's work):\n  \
             {loose} Loose end\n"
        ),
        "",
    );
    let v = verify().arg("--json").json_with(0);
    assert_eq!(v["in_sync"], true, "{v}");
    assert_eq!(
        v["unnamed_tasks"],
        serde_json::json!([{"id": loose, "title": "Loose end", "status": "open"}]),
        "{v}"
    );
    env.br(&["close", loose]);
    verify().prints(
        0,
        ".ralph/spec.md is in sync with br: 3 steps, 1/3 steps done.\n",
        "",
    );

    // Checked, but the task is still open (line 6).
    write_spec(&env, &spec(&epic, &t, ['x', 'x', ' ']));
    verify().prints(
        1,
        &format!(
            ".ralph/spec.md is out of sync with br (1 problem):\n  line 6: 1.2 Second [{0}]: checked, but task {0} is open\n",
            t[1]
        ),
        "",
    );

    // Unchecked, but the task is closed (line 5).
    write_spec(&env, &spec(&epic, &t, [' ', ' ', ' ']));
    verify().prints(
        1,
        &format!(
            ".ralph/spec.md is out of sync with br (1 problem):\n  line 5: 1.1 First [{0}]: not checked, but task {0} is closed\n",
            t[0]
        ),
        "",
    );

    // Two wrong boxes: counts agree, ids don't.
    write_spec(&env, &spec(&epic, &t, [' ', 'x', ' ']));
    verify().prints(
        1,
        &format!(
            ".ralph/spec.md is out of sync with br (2 problems):\n  line 5: 1.1 First [{0}]: not checked, but task {0} is closed\n  line 6: 1.2 Second [{1}]: checked, but task {1} is open\n",
            t[0], t[1]
        ),
        "",
    );

    // Unknown id, a step with no id, and a task of the epic no step names.
    write_spec(
        &env,
        &format!(
            "Epic: [{epic}]\n- [x] one [{}]\n- [ ] two [{epic}-zzz9]\n- [ ] three\n",
            t[0]
        ),
    );
    let v = verify().arg("--json").json_with(1);
    let kinds = finding_kinds(&v);
    assert_eq!(
        kinds,
        vec![
            ("unknown-task", Value::from(3)),
            ("no-task", Value::from(4)),
            ("not-in-spec", Value::Null),
            ("not-in-spec", Value::Null)
        ],
        "{v}"
    );
    assert_eq!(v["in_sync"], false);
    assert_eq!(v["tracker"], "br");
    // The tasks no step names are shown with their titles, read from br.
    assert_eq!(
        v["findings"][2]["message"],
        format!(
            "task {} (Task 2) of epic {epic} is not referenced by any step",
            t[1]
        ),
        "{v}"
    );
    assert_eq!(v["findings"][3]["task"], t[2].as_str(), "{v}");

    // Ids are compared case-insensitively, as br itself does.
    write_spec(
        &env,
        &spec(
            &epic.to_uppercase(),
            &t.iter().map(|s| s.to_uppercase()).collect::<Vec<_>>(),
            ['x', ' ', ' '],
        ),
    );
    verify().assert().code(0);
}

#[test]
fn verify_sync_cannot_check_without_spec_or_tracker() {
    let env = TestEnv::new();
    env.ralph()
        .arg("verify-sync")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no spec at").and(predicate::str::contains("ralph init")));
    write_spec(&env, "- [ ] step [br-abc]\n");
    // PATH without br or bd.
    env.ralph().arg("verify-sync").assert().code(2).stderr(
        predicate::str::contains("neither `br` nor `bd` is on PATH")
            .and(predicate::str::contains("cargo install beads_rust")),
    );
    // br present, but no workspace here: its own error, passed on.
    env.ralph()
        .env("PATH", env.path_with_br())
        .arg("verify-sync")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("br init"));
    // A spec that names no tasks has nothing to compare.
    write_spec(&env, "- [ ] a\n- [x] b\n");
    env.ralph()
        .arg("verify-sync")
        .assert()
        .code(0)
        .stdout(predicate::str::contains("names no tracker tasks"));
}

#[test]
fn complete_is_refused_out_of_sync_and_accepted_in_sync() {
    let env = TestEnv::new();
    let (epic, t) = workspace(&env);
    let path = env.path_with_br();
    let complete = env.project.join(".ralph/COMPLETE");

    write_spec(&env, &spec(&epic, &t, ['x', 'x', ' ']));
    env.ralph()
        .env("PATH", &path)
        .args(["complete", "-m", "all done"])
        .prints(
            1,
            "",
            &format!(
                "ralph complete: refused, the work is not done (2/3 steps done):\n  \
                 open step: line 7: 1.R Review [{2}]\n  \
                 line 5: 1.1 First [{0}]: checked, but task {0} is open\n  \
                 line 6: 1.2 Second [{1}]: checked, but task {1} is open\n\
                 Finish these (or run `ralph waiting --reason ...` if a human is needed).\n",
                t[0], t[1], t[2]
            ),
        );
    assert!(!complete.exists());

    // Boxes all checked, but the tasks are not closed: still refused.
    write_spec(&env, &spec(&epic, &t, ['x', 'x', 'x']));
    env.ralph()
        .env("PATH", &path)
        .arg("complete")
        .assert()
        .code(1);
    assert!(!complete.exists());

    for id in &t {
        env.br(&["close", id]);
    }
    env.ralph()
        .env("PATH", &path)
        .args(["complete", "-m", "all done"])
        .assert()
        .success()
        .stdout(predicate::str::contains("3/3 steps done"));
    let text = fs::read_to_string(&complete).unwrap();
    assert!(
        text.contains("forced: no")
            && text.contains("tracker: br, in sync")
            && text.ends_with("\nall done\n"),
        "{text}"
    );

    // --force writes it anyway, and says so.
    fs::remove_file(&complete).unwrap();
    write_spec(
        &env,
        &format!(
            "{}- [ ] more work [{}]\n",
            spec(&epic, &t, ['x', 'x', 'x']),
            t[0]
        ),
    );
    env.ralph()
        .env("PATH", &path)
        .args(["complete", "--force"])
        .assert()
        .success()
        .stdout(predicate::str::contains("forced"));
    assert!(
        fs::read_to_string(&complete)
            .unwrap()
            .contains("forced: yes")
    );
}

#[test]
fn waiting_resume_reset_and_status() {
    let env = TestEnv::new();
    write_spec(
        &env,
        "- [x] **1** one\n- [ ] **2** two\n- [ ] **3** three\n",
    );
    env.ralph()
        .args(["waiting"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--reason"));
    env.ralph()
        .args(["waiting", "--reason", "  "])
        .assert()
        .code(2);
    // From a subfolder: the project is found above it.
    fs::create_dir_all(env.project.join("src/deep")).unwrap();
    env.ralph()
        .current_dir(env.project.join("src/deep"))
        .args(["waiting", "--reason", "Need the staging password"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Need the staging password"));
    env.ralph().arg("status").prints(
        0,
        "project: {project}\n\
            spec:    1/3 steps done\n\
            next:    line 2: 2 two\n\
            COMPLETE: no\n\
            WAITING since {time}: Need the staging password\n         \
            answer: `ralph answer \"<your answer>\"`\n\
            loop:    not running\n\
            config:  nothing to approve\n",
        "",
    );

    let json: Value = env.ralph().args(["status", "--json"]).json_with(0);
    assert_eq!(json["spec"]["done"], 1);
    assert_eq!(json["spec"]["next"]["line"], 2);
    assert_eq!(json["waiting"]["reason"], "Need the staging password");
    assert_eq!(json["complete"], Value::Null);

    env.ralph().arg("resume").prints(
        0,
        "Was waiting since {time}: Need the staging password\n\
            Removed {project}/.ralph/WAITING; `ralph loop --resume` goes on with the run (`ralph loop` starts a new one).\n",
        "",
    );
    assert!(!env.project.join(".ralph/WAITING").exists());
    env.ralph().arg("resume").prints(
        0,
        "Not waiting (no {project}/.ralph/WAITING); nothing to do.\n",
        "",
    );

    fs::write(env.project.join(".ralph/COMPLETE"), "done by hand\n").unwrap();
    env.ralph().arg("status").prints(
        0,
        "project: {project}\n\
            spec:    1/3 steps done\n\
            next:    line 2: 2 two\n\
            COMPLETE (file written {time}): done by hand\n\
            WAITING: no\n\
            loop:    not running\n\
            config:  nothing to approve\n",
        "",
    );
    env.ralph().arg("reset").prints(
        0,
        "Removed {project}/.ralph/COMPLETE; `ralph loop` will run again.\n",
        "",
    );
    assert!(!env.project.join(".ralph/COMPLETE").exists());
    env.ralph()
        .arg("reset")
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing to do"));
}

#[test]
fn task_ids_written_in_other_forms_are_checked_against_real_br() {
    let env = TestEnv::new();
    let (_epic, t) = workspace(&env);
    let path = env.path_with_br();
    env.br(&["close", &t[0]]);
    // The forms public Ralph task files use; each disagrees with br here
    // but the last. ralph used to say "names no tracker tasks" and exit 0.
    write_spec(
        &env,
        &format!(
            "- [ ] {}: foundation: set up\n- [x] **{}** parser\n- [ ] ship it ({})\n- [ ] docs (zz-9)\n",
            t[0], t[1], t[2]
        ),
    );
    let v = env
        .ralph()
        .env("PATH", &path)
        .args(["verify-sync", "--json"])
        .json_with(1);
    let kinds = finding_kinds(&v);
    assert_eq!(
        kinds,
        vec![
            ("unchecked-but-closed", Value::from(1)),
            ("checked-but-open", Value::from(2)),
            ("unread-task-form", Value::from(4)),
        ],
        "{v}"
    );
    env.ralph()
        .env("PATH", &path)
        .args(["complete"])
        .assert()
        .code(1);
    assert!(!env.project.join(".ralph/COMPLETE").exists());
}

#[test]
fn a_fenced_block_holding_a_comment_opener_hides_no_steps() {
    let env = TestEnv::new();
    // ralph complete used to write COMPLETE here at "1/1 steps done".
    write_spec(
        &env,
        "# Spec\n\n- [x] one\n\n```html\n<!-- a template -->\n<!-- unclosed\n```\n\n- [ ] two\n- [ ] three\n",
    );
    env.ralph().arg("complete").assert().code(1).stderr(
        predicate::str::contains("refused").and(predicate::str::contains("1/3 steps done")),
    );
    assert!(!env.project.join(".ralph/COMPLETE").exists());
    env.ralph()
        .arg("status")
        .assert()
        .success()
        .stdout(predicate::str::contains("spec:    1/3 steps done"));
}

#[test]
fn add_makes_the_task_in_real_br_and_the_step_where_asked() {
    let env = TestEnv::new();
    let (epic, t) = workspace(&env);
    let path = env.path_with_br();
    write_spec(&env, &spec(&epic, &t, [' ', ' ', ' ']));
    fs::write(env.project.join(".ralph/COMPLETE"), "done by hand\n").unwrap();
    let add = |args: &[&str]| env.ralph().env("PATH", &path).arg("add").args(args);
    let tasks_before = env.br(&["list", "--all", "--json"]);
    // A place that does not exist: refused before any task is made.
    add(&["x", "--after", "9.9"]).prints(2, "", "ralph add: --after 9.9: no step has that label\n");
    assert_eq!(env.br(&["list", "--all", "--json"]), tasks_before);

    let out = add(&[
        "Add a --verbose flag\nthat says [more]",
        "--criteria",
        "each step prints one line",
    ])
    .stdout_with(0);
    let text = fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap();
    let added = ralph::work::spec::parse(&text)
        .steps
        .into_iter()
        .find(|s| s.label.as_deref() == Some("1.3"))
        .unwrap();
    let id = added.task.clone().unwrap();
    assert_eq!(added.title, "Add a --verbose flag that says (more)");
    assert!(
        text.contains(&format!(
            "- [ ] **1.3** Add a --verbose flag that says (more) [{id}]\n- [ ] **1.R** Review"
        )),
        "{text}"
    );
    assert_eq!(
        out,
        format!(
            "Added step 1.3 Add a --verbose flag that says (more) [{id}] to {}/.ralph/spec.md (task {id} made with br).\n\
             Removed {}/.ralph/COMPLETE: with this open step the work is not done.\n",
            env.project.display(),
            env.project.display()
        )
    );
    // The task is the epic's, with the criteria; the spec and br agree.
    let shown: serde_json::Value = serde_json::from_str(&env.br(&["show", &id, "--json"])).unwrap();
    let shown = if shown.is_array() {
        shown[0].clone()
    } else {
        shown
    };
    assert_eq!(shown["title"], "Add a --verbose flag that says (more)");
    assert_eq!(shown["description"], "each step prints one line");
    env.ralph()
        .env("PATH", &path)
        .arg("verify-sync")
        .assert()
        .code(0);

    // A spec without tasks: the step alone, and said.
    write_spec(&env, "- [ ] **1** one\n");
    add(&["two", "--phase", "1"]).prints(
        2,
        "",
        "ralph add: --phase 1: no step is labelled 1.something\n",
    );
    add(&["two"]).prints(
        0,
        "Added step 2 two to {project}/.ralph/spec.md (the spec names no tracker tasks: no task made).\n",
        "",
    );
    // Right after step 1, before 2: a label between theirs, none renumbered.
    add(&["one and a bit", "--after", "1"]).prints(
        0,
        "Added step 1.1 one and a bit to {project}/.ralph/spec.md (the spec names no tracker tasks: no task made).\n",
        "",
    );
    assert_eq!(
        fs::read_to_string(env.project.join(".ralph/spec.md")).unwrap(),
        "- [ ] **1** one\n- [ ] **1.1** one and a bit\n- [ ] **2** two\n"
    );
}
