//! `ralph doctor` asks each agent a loop here runs whether it can reach its
//! model (its login or key) without a session, of the real pinned clients
//! in a throwaway home; and starts an agent ralph confines itself inside
//! that sandbox, as its sessions start.

use std::fs;
use std::path::Path;
use std::time::Duration;

use crate::support::*;

/// A line of doctor's output as it prints it: `ok  ` or `FAIL`, the
/// check's name in its column, the detail.
fn line(ok: bool, name: &str, detail: &str) -> String {
    format!("{} {name:<14} {detail}", if ok { "ok  " } else { "FAIL" })
}

/// The fix under a failing check.
fn fix(text: &str) -> String {
    format!("     {:<14} fix: {text}", "")
}

/// The project's config names `text`'s agents, approved.
fn configured(env: &TestEnv, text: String) {
    env.approved_config(text);
}

#[test]
fn doctor_asks_codex_for_its_login_and_names_a_key_never_its_value() {
    let env = project();
    let codex = codex_bin();
    configured(
        &env,
        format!(
            "agent = \"codex\"\ncodex = {:?}\n",
            codex.display().to_string()
        ),
    );
    let at = format!("codex-cli {CODEX_VERSION} at {}", codex.display());
    let secret = "sk-test-not-to-be-printed-4242";
    // The test home's Codex talks to its own model provider, whose key it
    // reads from SCRIPTED_API_KEY.
    let said = env
        .ralph()
        .env("SCRIPTED_API_KEY", secret)
        .doctor_lines("agents");
    assert_eq!(
        said,
        [line(
            true,
            "agents",
            &format!("codex: {at}, key set (SCRIPTED_API_KEY)")
        )]
    );
    // Its own provider with the key unset: every session would fail.
    let said = env
        .ralph()
        .env("SCRIPTED_API_KEY", "")
        .doctor_lines("agents");
    assert_eq!(
        said,
        [
            line(
                false,
                "agents",
                &format!(
                    "codex: {at}, its model provider scripted reads its key from SCRIPTED_API_KEY, which is not set"
                )
            ),
            fix("export SCRIPTED_API_KEY=<your key> (its provider's key) before `ralph loop`"),
        ]
    );
    // OpenAI's own provider, no login: `codex login status` says so, and a
    // key in OPENAI_API_KEY is one `codex exec` does not read.
    fs::write(env.home.join(".codex/config.toml"), "model = \"gpt-5.4\"\n").unwrap();
    let said = env
        .ralph()
        .env("OPENAI_API_KEY", secret)
        .doctor_lines("agents");
    assert_eq!(
        said,
        [
            line(
                false,
                "agents",
                &format!(
                    "codex: {at}, not logged in (`codex login status`); OPENAI_API_KEY is set, but `codex exec` does not read it"
                )
            ),
            fix(
                "`codex login`, or `printenv OPENAI_API_KEY | codex login --with-api-key`, or set CODEX_API_KEY: every session would fail"
            ),
        ]
    );
    // The variable it reads: named, its value nowhere.
    let out = env
        .ralph()
        .env("CODEX_API_KEY", secret)
        .arg("doctor")
        .assert()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains(&line(
            true,
            "agents",
            &format!("codex: {at}, key set (CODEX_API_KEY)")
        )),
        "{out}"
    );
    assert!(!out.contains(secret), "{out}");
    // Logged in with the key as Codex keeps it (`codex login status`
    // then shows it masked: not passed on either).
    let login = run_with_stdin(
        {
            let mut c = env.command(&codex);
            c.args(["login", "--with-api-key"]);
            c
        },
        secret,
        Duration::from_secs(30),
    );
    assert!(login.status.success(), "{login:?}");
    let out = env
        .ralph()
        .arg("doctor")
        .assert()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains(&line(
            true,
            "agents",
            &format!("codex: {at}, logged in (`codex login status`)")
        )),
        "{out}"
    );
    assert!(!out.contains(&secret[secret.len() - 5..]), "{out}");
    assert!(env.api.requests().is_empty(), "no session was started");
}

/// Gemini CLI has no command that says: its settings' choice of sign-in
/// and the environment, read as it reads them; what doctor fails, the
/// real `gemini -p` refuses (exit 41) before any request.
#[test]
fn doctor_says_how_gemini_signs_in_and_fails_where_it_cannot() {
    let env = project();
    let gemini = gemini_bin();
    configured(
        &env,
        format!(
            "agent = \"gemini\"\ngemini = {:?}\n",
            gemini.display().to_string()
        ),
    );
    let at = format!("{GEMINI_VERSION} at {}", gemini.display());
    let said = env.ralph().doctor_lines("agents");
    assert_eq!(
        said,
        [line(
            true,
            "agents",
            &format!("gemini: {at}, key set (GEMINI_API_KEY)")
        )]
    );
    // No sign-in chosen and no key.
    fs::write(env.home.join(".gemini/settings.json"), "{}\n").unwrap();
    let unset = |mut c: Ralph| {
        c.cmd.env_remove("GEMINI_API_KEY");
        c.cmd.env_remove("GOOGLE_GEMINI_BASE_URL");
        c
    };
    assert_eq!(
        unset(env.ralph()).doctor_lines("agents"),
        [
            line(
                false,
                "agents",
                &format!(
                    "gemini: {at}, not logged in: no GEMINI_API_KEY, and no sign-in chosen (`security.auth.selectedType` in ~/.gemini/settings.json)"
                )
            ),
            fix("set GEMINI_API_KEY, or run `gemini` once and sign in: every session would fail"),
        ]
    );
    let refused = |vars: &[(&str, &str)]| {
        let mut c = env.command(&gemini);
        c.args(["-p", "hi", "--output-format", "json"]);
        for (k, v) in vars {
            c.env(k, v);
        }
        run_with_stdin(c, "", Duration::from_secs(60)).status.code()
    };
    assert_eq!(
        refused(&[("GEMINI_API_KEY", ""), ("GOOGLE_GEMINI_BASE_URL", "")]),
        Some(41)
    );
    // A base URL and a key, no choice: the gateway sign-in, refused too.
    assert_eq!(
        env.ralph().doctor_lines("agents"),
        [
            line(
                false,
                "agents",
                &format!(
                    "gemini: {at}, GOOGLE_GEMINI_BASE_URL alone chooses the gateway sign-in, which `gemini -p` refuses"
                )
            ),
            fix(
                "set `security.auth.selectedType = \"gemini-api-key\"` in ~/.gemini/settings.json, with GEMINI_API_KEY: every session would fail"
            ),
        ]
    );
    assert_eq!(refused(&[]), Some(41));
    // The key in the `.env` file it loads counts: named, not shown.
    fs::write(
        env.home.join(".env"),
        "GEMINI_API_KEY=sk-from-env-file-77\n",
    )
    .unwrap();
    let out = unset(env.ralph())
        .arg("doctor")
        .assert()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.contains(&line(
            true,
            "agents",
            &format!("gemini: {at}, key set (GEMINI_API_KEY)")
        )),
        "{out}"
    );
    assert!(!out.contains("sk-from-env-file-77"), "{out}");
    assert!(env.api.requests().is_empty(), "no session was started");
}

/// pi and opencode say which providers they have models of (a key in the
/// environment, the user's own provider); pi with none fails; opencode
/// with only its own free models runs, and says so.
#[test]
fn doctor_asks_pi_and_opencode_which_models_they_can_use() {
    let env = project();
    let (pi, opencode) = (pi_bin(), opencode_bin());
    configured(
        &env,
        format!(
            "agent = \"pi\"\nfallback = [\"opencode\"]\npi = {:?}\nopencode = {:?}\n",
            pi.display().to_string(),
            opencode.display().to_string()
        ),
    );
    let pi_at = format!("{PI_VERSION} at {}", pi.display());
    let oc_at = format!("{OPENCODE_VERSION} at {}", opencode.display());
    assert_eq!(
        env.ralph().doctor_lines("agents"),
        [line(
            true,
            "agents",
            &format!(
                "pi: {pi_at}, models of anthropic, google, scripted (`pi --list-models`); opencode: {oc_at}, models of anthropic, google, scripted (`opencode models`)"
            )
        )]
    );
    // Without the keys, and opencode without the user's provider: its own
    // free models only.
    let keyless = || {
        let mut c = env.ralph();
        c.cmd.env_remove("ANTHROPIC_API_KEY");
        c.cmd.env_remove("GEMINI_API_KEY");
        c
    };
    fs::write(env.opencode_config_dir().join("opencode.json"), "{}\n").unwrap();
    assert_eq!(
        keyless().doctor_lines("agents"),
        [line(
            true,
            "agents",
            &format!(
                "pi: {pi_at}, models of scripted (`pi --list-models`); opencode: {oc_at}, no provider logged in: only opencode's own free models (`opencode auth login` for another)"
            )
        )]
    );
    // pi with no provider at all.
    fs::remove_file(env.home.join(".pi/agent/models.json")).unwrap();
    assert_eq!(
        keyless().doctor_lines("agents"),
        [
            line(
                false,
                "agents",
                &format!(
                    "pi: {pi_at}, not logged in: no provider has a key or a login (`pi --list-models` lists no model)"
                )
            ),
            fix(
                "set your provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...), or run `pi` and `/login`: every session would fail"
            ),
        ]
    );
    assert!(env.api.requests().is_empty(), "no session was started");
}

/// The reviewer's agent is asked too.
#[test]
fn doctor_asks_the_reviewers_agent_for_its_login() {
    let env = project();
    let codex = codex_bin();
    configured(
        &env,
        format!(
            "codex = {:?}\n[review]\nagent = \"codex\"\n",
            codex.display().to_string()
        ),
    );
    let said = env
        .ralph()
        .env("SCRIPTED_API_KEY", "")
        .doctor_lines("review");
    assert_eq!(
        said[0],
        line(
            false,
            "review",
            &format!(
                "codex: codex-cli {CODEX_VERSION} at {}, its model provider scripted reads its key from SCRIPTED_API_KEY, which is not set",
                codex.display()
            )
        )
    );
}

/// An agent ralph confines itself, whose program cannot run inside the
/// sandbox (a launcher under /tmp, which the sandbox empties, that runs a
/// program elsewhere there): doctor starts it there as a session would,
/// and fails the check with what it said (it used to say `ok confined`
/// and every session failed). The pinned pi starts there.
#[test]
fn doctor_starts_a_confined_agent_inside_the_sandbox_and_says_when_it_cannot_run() {
    sandbox_tools();
    let env = project();
    let pi = pi_bin();
    let root = env.tmp.path();
    assert!(root.starts_with("/tmp"), "{}", root.display());
    let (bin, real) = (root.join("bin"), root.join("elsewhere"));
    fs::create_dir_all(&bin).unwrap();
    fs::create_dir_all(&real).unwrap();
    std::os::unix::fs::symlink(&pi, real.join("pi")).unwrap();
    let launcher = bin.join("pi");
    write_script(
        &launcher,
        &format!("#!/bin/sh\nexec {} \"$@\"\n", real.join("pi").display()),
    );
    configured(
        &env,
        format!(
            "agent = \"pi\"\npi = {:?}\nconfined = true\n",
            launcher.display().to_string()
        ),
    );
    let said = env.ralph().doctor_lines("confined");
    assert_eq!(said.len(), 2, "{said:#?}");
    let head = format!(
        "FAIL confined       `ralph loop --confined` cannot run here (and .ralph/config.toml asks for it): {} does not run inside ralph's bubblewrap (exit status: 127): ",
        launcher.display()
    );
    assert!(
        said[0].starts_with(&head) && said[0].ends_with("not found"),
        "{said:#?}"
    );
    assert_eq!(
        said[1],
        fix(
            "install pi where the sandbox sees it: not under /tmp, /run or /var/tmp (it empties them), nor behind a launcher that runs a program there (npm install -g @mariozechner/pi-coding-agent)"
        )
    );
    // Outside the sandbox the launcher runs: the agents check passes it.
    assert!(
        env.ralph().doctor_lines("agents")[0].starts_with("ok   agents         pi: "),
        "the launcher runs outside"
    );
    configured(
        &env,
        format!(
            "agent = \"pi\"\npi = {:?}\nconfined = true\n",
            pi.display().to_string()
        ),
    );
    let said = env.ralph().doctor_lines("confined");
    assert!(
        said.len() == 1
            && said[0].starts_with("ok   confined ")
            && said[0].ends_with("; pi started inside ralph's bubblewrap"),
        "{said:#?}"
    );
}

/// An executable script at `path`.
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}
