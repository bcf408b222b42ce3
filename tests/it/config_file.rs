//! `.ralph/config.toml` as a user meets it: a key under the wrong table is
//! told where it landed and where it belongs, with its file and line; and
//! what needs approval is shown as TOML, the way it is written there.

use std::fs;

use crate::support::{TestEnv, project};

fn config(env: &TestEnv, text: &str) {
    fs::write(env.project.join(".ralph/config.toml"), text).unwrap();
}

#[test]
fn a_key_under_the_wrong_table_says_where_it_landed_and_where_it_belongs() {
    let env = project();
    config(&env, "[gate]\ncommands = [\"true\"]\nmax_iterations = 5\n");
    env.ralph().args(["loop"]).prints(
        2,
        "",
        "ralph loop: invalid loop configuration: {project}/.ralph/config.toml: TOML parse error at line 3, column 1\n  |\n3 | max_iterations = 5\n  | ^^^^^^^^^^^^^^\n\
         `max_iterations` is under [gate], where it is not a key; it belongs at the top of .ralph/config.toml, before any [table]\n",
    );
    config(&env, "max_iterations = 5\n[notify]\nwhen = \"step\"\n");
    env.ralph().args(["trust"]).prints(
        2,
        "",
        "ralph trust: invalid loop configuration: {project}/.ralph/config.toml: TOML parse error at line 3, column 1\n  |\n3 | when = \"step\"\n  | ^^^^\n\
         `when` is under [notify], where it is not a key; it belongs under [gate] or [review]\n",
    );
}

#[test]
fn trust_and_the_loops_refusal_show_the_settings_as_toml() {
    let env = project();
    config(
        &env,
        "max_iterations = 5\n[review]\nwhen = \"step\"\n[gate]\ncommands = [\"make test\"]\n",
    );
    let shown = "    [gate]\n    commands = [\"make test\"]\n    [review]\n    when = \"step\"\n";
    env.ralph().args(["trust"]).prints(
        2,
        &format!("{{project}} asks ralph (and the claude it starts) to run or allow:\n{shown}"),
        "ralph trust: not approved: nobody to ask here (no terminal); read the lines above and run `ralph trust --yes`\n",
    );
    let refusal = env.ralph().args(["loop"]).stderr_with(2);
    assert!(
        refusal.contains(&format!("approved:\n{shown}A session can write"))
            && !refusal.contains("null"),
        "{refusal}"
    );
}
