//! No tracker: the spec alone. Each step is done when its box is checked;
//! nothing is run, nothing asked. A project is here when it has no
//! `.beads` and its spec names no task; it is also how a step whose task
//! its tracker does not keep is judged (`[#12]` with beads), and how the
//! steps are judged while their tasks wait for ralph, or a pull request,
//! to close them (`Caps::ralph_closes`).

use crate::work::project::Project;

use super::Health;

/// The project keeps no tasks: no `.beads`, and a spec that names none.
pub fn in_use(project: &Project) -> bool {
    std::fs::symlink_metadata(project.root.join(".beads")).is_err()
        && crate::fsutil::read_optional_capped(&project.spec(), 1 << 20)
            .ok()
            .flatten()
            .is_some_and(|t| !crate::work::spec::parse(&t).references_tasks())
}

/// What doctor says of it.
pub fn health() -> Health {
    Health::Pass(
        "none used here: no .beads, and the spec names no task (its steps are checked by their boxes; br adds tasks)".into(),
    )
}
