//! `ralph install-hook` / `uninstall-hook` against real users' settings files.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use crate::support::{TestEnv, ralph_bin, repo_root};

/// Settings files as users have them: ours (tests/fixtures) and, when the
/// workspace has it, the shared set they were taken from.
fn fixtures() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in [
        repo_root().join("tests/fixtures/claude-settings"),
        repo_root().join("../shared/fixtures/claude-settings"),
    ] {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let seen = out
                .iter()
                .any(|o| o.file_name() == p.file_name() && fs::read(o).ok() == fs::read(&p).ok());
            if p.extension().is_some_and(|x| x == "json") && !seen {
                out.push(p);
            }
        }
    }
    assert!(
        out.len() >= 6,
        "expected the settings fixtures, found {out:?}"
    );
    out
}

fn expected_command() -> String {
    format!("{} hook stop", ralph_bin().display())
}

/// Every Stop handler command in a settings document.
fn stop_commands(doc: &Value) -> Vec<String> {
    doc["hooks"]["Stop"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .filter_map(|h| h["command"].as_str().map(String::from))
        .collect()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// The document with ralph's handler (and what install created for it) taken
/// out by hand: what must equal the original.
fn without_ralph(mut doc: Value, original: &Value) -> Value {
    let stop = doc["hooks"]["Stop"].as_array_mut().unwrap();
    let last = stop.pop().unwrap();
    assert_eq!(
        stop_commands(&serde_json::json!({"hooks": {"Stop": [last]}})),
        vec![expected_command()]
    );
    if stop.is_empty() && original["hooks"].get("Stop").is_none() {
        doc["hooks"].as_object_mut().unwrap().remove("Stop");
    }
    if doc["hooks"].as_object().unwrap().is_empty() && original.get("hooks").is_none() {
        doc.as_object_mut().unwrap().remove("hooks");
    }
    doc
}

#[test]
fn every_fixture_keeps_all_content_and_gets_exactly_one_handler() {
    for fixture in fixtures() {
        let env = TestEnv::new();
        let name = fixture.file_name().unwrap().to_string_lossy().to_string();
        let path = env.tmp.path().join(&name);
        let original_text = fs::read_to_string(&fixture).unwrap();
        fs::write(&path, &original_text).unwrap();
        let original = json(&path);

        env.ralph()
            .args(["install-hook", "--settings"])
            .arg(&path)
            .assert()
            .success()
            .stdout(predicate::str::contains("Installed the ralph Stop hook in"));
        let once = fs::read_to_string(&path).unwrap();
        let doc = json(&path);
        let ours: Vec<_> = stop_commands(&doc)
            .into_iter()
            .filter(|c| c.ends_with(" hook stop"))
            .collect();
        assert_eq!(ours, vec![expected_command()], "{name}");
        assert_eq!(
            without_ralph(doc, &original),
            original,
            "{name}: other content changed"
        );
        // Key order of the original is kept, the new key (if any) comes last.
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&json(&path))[..keys(&original).len()],
            keys(&original)[..],
            "{name}"
        );
        assert_eq!(
            once.ends_with('\n'),
            original_text.ends_with('\n'),
            "{name}: final newline"
        );
        assert_untouched_lines_kept(&original_text, &once, &name);
        assert!(!once.contains("\\u"), "{name}: no \\u escapes were added");

        for _ in 0..2 {
            env.ralph()
                .args(["install-hook", "--settings"])
                .arg(&path)
                .assert()
                .success()
                .stdout(predicate::str::contains("already installed"));
        }
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            once,
            "{name}: later installs change nothing"
        );

        env.ralph()
            .args(["uninstall-hook", "--settings"])
            .arg(&path)
            .assert()
            .success()
            .stdout(predicate::str::contains("Removed the ralph Stop hook"));
        assert_eq!(
            json(&path),
            original,
            "{name}: uninstall gives back the original document"
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            original_text,
            "{name}: and even its exact bytes"
        );
    }
}

/// Every line of the original is still there, in order, but for lines that
/// only gained a trailing comma or had an empty `{}` / `[]` filled.
fn assert_untouched_lines_kept(old: &str, new: &str, name: &str) {
    let diff = similar::TextDiff::from_lines(old, new);
    let removed: Vec<&str> = diff
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Delete)
        .map(|c| c.value())
        .collect();
    for line in removed {
        if line.contains("{}") || line.contains("[]") {
            continue; // an empty container that now holds the hook
        }
        let with_comma = format!("{},", line.trim_end_matches('\n'));
        assert!(
            new.lines().any(|l| l == with_comma),
            "{name}: line {line:?} was changed"
        );
    }
}

#[test]
fn malformed_json_is_refused_with_line_and_column_and_left_alone() {
    let env = TestEnv::new();
    let path = env.tmp.path().join("settings.json");
    let text = "{\n  \"model\": \"opus\",\n  \"theme\": \"dark\"\n  \"x\": 1\n}\n";
    fs::write(&path, text).unwrap();
    env.ralph()
        .args(["install-hook", "--settings"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(format!("{}:4:3:", path.display())))
        .stderr(predicate::str::contains("not changed"));
    assert_eq!(fs::read_to_string(&path).unwrap(), text);

    for (bad, what) in [
        ("[1, 2]", "top level must be a JSON object"),
        ("{\"hooks\": []}", "\"hooks\" must be an object"),
        (
            "{\"hooks\": {\"Stop\": \"x\"}}",
            "\"hooks.Stop\" must be an array",
        ),
        // A byte-order mark and comments are named as such.
        (
            "\u{feff}{\"a\": 1}\n",
            "1:1: the file starts with a UTF-8 byte-order mark (BOM)",
        ),
        (
            "{\n  // mine\n  \"a\": 1\n}\n",
            "2:3: a comment: settings files are plain JSON and cannot hold comments",
        ),
    ] {
        fs::write(&path, bad).unwrap();
        env.ralph()
            .args(["install-hook", "--settings"])
            .arg(&path)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(what));
        assert_eq!(fs::read_to_string(&path).unwrap(), bad);
    }
}

#[test]
fn crlf_empty_and_missing_files_come_back_as_they_were() {
    let env = TestEnv::new();
    let round_trip = |path: &Path| {
        env.ralph()
            .args(["install-hook", "--settings"])
            .arg(path)
            .assert()
            .success();
        let installed = fs::read_to_string(path).unwrap();
        env.ralph()
            .args(["uninstall-hook", "--settings"])
            .arg(path)
            .assert()
            .success();
        installed
    };
    // Every fixture with Windows line endings keeps them, and comes back.
    for fixture in fixtures() {
        let name = fixture.file_name().unwrap().to_string_lossy().to_string();
        let crlf = fs::read_to_string(&fixture).unwrap().replace('\n', "\r\n");
        let path = env.tmp.path().join(format!("crlf-{name}"));
        fs::write(&path, &crlf).unwrap();
        let installed = round_trip(&path);
        // (A file without any line break has no line ending to keep.)
        assert!(
            !crlf.contains('\n') || !installed.replace("\r\n", "").contains('\n'),
            "{name}: an LF-only line was inserted:\n{installed}"
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), crlf, "{name}");
    }
    for blank in ["", "\n", "\r\n"] {
        let path = env.tmp.path().join("blank.json");
        fs::write(&path, blank).unwrap();
        round_trip(&path);
        assert_eq!(fs::read_to_string(&path).unwrap(), blank, "{blank:?}");
    }
    let missing = env.tmp.path().join("never-there/settings.json");
    round_trip(&missing);
    assert!(
        !missing.exists(),
        "install then uninstall leaves no file behind"
    );
}

#[test]
fn the_hook_names_the_stable_path_the_user_runs_not_its_versioned_target() {
    let env = TestEnv::new();
    // A package manager's layout: a versioned folder behind a stable link.
    let cellar = env.tmp.path().join("Cellar/ralph/0.1.0/bin");
    fs::create_dir_all(&cellar).unwrap();
    fs::copy(crate::support::ralph_bin(), cellar.join("ralph")).unwrap();
    let bin = env.tmp.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(cellar.join("ralph"), bin.join("ralph")).unwrap();
    let settings = env.tmp.path().join("settings.json");
    let command = || stop_commands(&json(&settings))[0].clone();

    // Run through the link, and by name found on PATH: the same stable link.
    let through_link = env.command(bin.join("ralph"));
    let mut by_name = env.command("ralph");
    by_name.env("PATH", format!("{}:/usr/bin:/bin", bin.display()));
    for mut ralph in [through_link, by_name] {
        let _ = fs::remove_file(&settings);
        let out = crate::support::output_of_fresh_binary(
            ralph.args(["install-hook", "--settings"]).arg(&settings),
        );
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            command(),
            format!("{} hook stop", bin.join("ralph").display())
        );
    }
}

#[test]
fn missing_file_and_folder_are_created_private() {
    let env = TestEnv::new();
    let path = env.tmp.path().join("new/deeper/settings.json");
    env.ralph()
        .args(["install-hook", "--settings"])
        .arg(&path)
        .assert()
        .success();
    assert_eq!(stop_commands(&json(&path)), vec![expected_command()]);
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(fs::read_to_string(&path).unwrap().ends_with("}\n"));
}

#[test]
fn default_scope_is_the_user_settings_and_claude_config_dir_wins() {
    let env = TestEnv::new();
    let before = fs::read_to_string(env.user_settings()).unwrap();
    env.ralph()
        .args(["install-hook"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            env.user_settings().to_str().unwrap(),
        ));
    assert_eq!(
        stop_commands(&json(&env.user_settings())),
        vec![expected_command()]
    );
    assert!(json(&env.user_settings())["skipDangerousModePermissionPrompt"] == true);

    let config_dir = env.tmp.path().join("config");
    env.ralph().args(["uninstall-hook"]).assert().success();
    assert_eq!(fs::read_to_string(env.user_settings()).unwrap(), before);
    env.ralph()
        .env("CLAUDE_CONFIG_DIR", &config_dir)
        .args(["install-hook"])
        .assert()
        .success();
    assert_eq!(
        stop_commands(&json(&config_dir.join("settings.json"))),
        vec![expected_command()]
    );
    assert_eq!(
        fs::read_to_string(env.user_settings()).unwrap(),
        before,
        "~/.claude untouched"
    );
}

#[test]
fn project_and_local_scopes_write_into_the_project() {
    let env = TestEnv::new();
    env.ralph()
        .args(["-C"])
        .arg(&env.project)
        .args(["install-hook", "--scope", "project"])
        .current_dir("/")
        .assert()
        .success();
    env.ralph()
        .args(["install-hook", "--scope", "local"])
        .assert()
        .success();
    assert_eq!(
        stop_commands(&json(&env.project.join(".claude/settings.json"))),
        vec![expected_command()]
    );
    assert_eq!(
        stop_commands(&json(&env.project.join(".claude/settings.local.json"))),
        vec![expected_command()]
    );
    env.ralph()
        .args(["install-hook", "--scope", "local", "--settings", "x.json"])
        .assert()
        .code(2);
}

#[test]
fn symlinked_settings_stay_a_symlink_with_the_target_updated() {
    let env = TestEnv::new();
    let dotfiles = env.home.join("dotfiles/claude");
    fs::create_dir_all(&dotfiles).unwrap();
    let target = dotfiles.join("settings.json");
    fs::write(&target, "{\n    \"model\": \"opus\"\n}\n").unwrap();
    let link = env.user_settings();
    fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("../dotfiles/claude/settings.json", &link).unwrap();

    env.ralph().args(["install-hook"]).assert().success();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "still a symlink"
    );
    assert_eq!(
        fs::read_link(&link).unwrap(),
        PathBuf::from("../dotfiles/claude/settings.json")
    );
    assert_eq!(stop_commands(&json(&target)), vec![expected_command()]);
    assert!(
        fs::read_to_string(&target)
            .unwrap()
            .contains("\n        \"Stop\": ["),
        "four-space style kept"
    );
    assert_eq!(
        fs::read_dir(&dotfiles).unwrap().count(),
        1,
        "no temp file left behind"
    );
    env.ralph().args(["uninstall-hook"]).assert().success();
    assert_eq!(
        fs::read_to_string(&target).unwrap(),
        "{\n    \"model\": \"opus\"\n}\n"
    );
}

#[test]
fn file_mode_is_kept() {
    let env = TestEnv::new();
    for mode in [0o600, 0o644, 0o640] {
        let path = env.tmp.path().join(format!("s{mode:o}.json"));
        fs::write(&path, "{}").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        env.ralph()
            .args(["install-hook", "--settings"])
            .arg(&path)
            .assert()
            .success();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            mode
        );
    }
}

#[test]
fn read_only_folder_gives_a_clear_error_and_loses_nothing() {
    let env = TestEnv::new();
    let dir = env.tmp.path().join("ro");
    fs::create_dir(&dir).unwrap();
    let path = dir.join("settings.json");
    let text = "{\n  \"model\": \"opus\"\n}\n";
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o555)).unwrap();
    fs::set_permissions(env.tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    // Root ignores folder permissions: run as an ordinary user, as users do.
    let r = if nix::unistd::geteuid().is_root() {
        env.ralph_as_nobody()
    } else {
        env.ralph()
    };
    r.args(["install-hook", "--settings"])
        .arg(&path)
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot create a temporary file in",
        ))
        .stderr(predicate::str::contains(dir.to_str().unwrap()));
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn ten_concurrent_installs_leave_valid_json_and_one_handler() {
    let env = TestEnv::new();
    let path = env.tmp.path().join("settings.json");
    fs::copy(
        repo_root().join("tests/fixtures/claude-settings/with-other-hooks-and-plugins.json"),
        &path,
    )
    .unwrap();
    let original = json(&path);
    let children: Vec<_> = (0..10)
        .map(|_| {
            env.command(ralph_bin())
                .args(["install-hook", "--settings"])
                .arg(&path)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let doc = json(&path);
    let ours: Vec<_> = stop_commands(&doc)
        .into_iter()
        .filter(|c| c.ends_with(" hook stop"))
        .collect();
    assert_eq!(ours.len(), 1);
    assert_eq!(without_ralph(doc, &original), original);
    let leftovers: Vec<_> = fs::read_dir(env.tmp.path())
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().to_string();
            n.ends_with(".tmp").then_some(n)
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn dry_run_shows_a_diff_and_writes_nothing() {
    let env = TestEnv::new();
    let path = env.tmp.path().join("settings.json");
    fs::write(&path, "{\n  \"model\": \"opus\"\n}\n").unwrap();
    let mtime = fs::metadata(&path).unwrap().modified().unwrap();
    env.ralph()
        .args(["install-hook", "--dry-run", "--settings"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "-  \"model\": \"opus\"\n+  \"model\": \"opus\",\n+  \"hooks\": {",
        ))
        .stdout(predicate::str::contains(format!(
            "+            \"command\": \"{}\"",
            expected_command()
        )))
        .stdout(predicate::str::contains("Dry run"));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\n  \"model\": \"opus\"\n}\n"
    );
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    let missing = env.tmp.path().join("nope/settings.json");
    env.ralph()
        .args(["install-hook", "--dry-run", "--settings"])
        .arg(&missing)
        .assert()
        .success();
    assert!(
        !missing.parent().unwrap().exists(),
        "dry run creates no folder"
    );
}

#[test]
fn handler_from_an_old_binary_path_is_updated_in_place() {
    let env = TestEnv::new();
    let path = env.tmp.path().join("settings.json");
    let old = r#"{
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "'/home/me/old place/ralph' hook stop",
            "timeout": 30
          }
        ]
      },
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done"
          }
        ]
      }
    ]
  }
}
"#;
    fs::write(&path, old).unwrap();
    env.ralph()
        .args(["install-hook", "--settings"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("Updated the ralph Stop hook"))
        .stdout(predicate::str::contains(
            "was: '/home/me/old place/ralph' hook stop",
        ));
    let doc = json(&path);
    assert_eq!(
        stop_commands(&doc),
        vec![expected_command(), "notify-send done".to_string()]
    );
    assert_eq!(
        doc["hooks"]["Stop"][0]["hooks"][0]["timeout"], 30,
        "the handler's other fields stay"
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        old.replace("'/home/me/old place/ralph' hook stop", &expected_command())
    );
}

#[test]
fn uninstall_without_a_handler_changes_nothing() {
    let env = TestEnv::new();
    let path = env.tmp.path().join("settings.json");
    fs::write(&path, "{\"hooks\": {}}").unwrap();
    env.ralph()
        .args(["uninstall-hook", "--settings"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::contains("nothing to do"));
    assert_eq!(fs::read_to_string(&path).unwrap(), "{\"hooks\": {}}");
    env.ralph()
        .args(["uninstall-hook", "--settings"])
        .arg(env.tmp.path().join("absent.json"))
        .assert()
        .success();
    assert!(!env.tmp.path().join("absent.json").exists());
}
