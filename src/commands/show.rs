//! `warren show PLANFILE`: a saved plan as `plan` showed it, in any format,
//! from the file alone. It reads no topology file and no broker: what it
//! prints is what was reviewed, not what apply would do now (apply plans
//! again and refuses the file if that differs).

use std::path::Path;

use super::{fleet, plan};
use crate::error::{self, Done, Error};
use crate::render::Format;
use crate::saved_plan::{self, Saved, SavedPlan};
use crate::writer::Writer;

pub fn run(path: &Path, format: Format, out: &Writer) -> error::Result {
    let saved = saved_plan::read_any(path).map_err(|d| Error::invalid().drawn([d], &Default::default()))?;
    match saved {
        Saved::One(one) => {
            let Some(shown) = &one.shown else {
                return Err(Error::invalid().line(format!(
                    "{} holds no plan to show: it is one environment's part of a saved plan of several. \
                     Show the file `plan --env ... --out` wrote.",
                    path.display()
                )));
            };
            out.note(made(&one));
            let mut document = shown.document.clone();
            document.origin = shown.origin.clone();
            plan::print_document(&document, format, out);
        }
        Saved::Environments(plans) => {
            if let Some(first) = plans.environments.first() {
                out.note(made(first));
            }
            fleet::print(&plans.shown.document(), format, out);
        }
    }
    Ok(Done::Ok)
}

/// When and against what the plan was made, for stderr: stdout is the
/// plan as it was printed then.
fn made(plan: &SavedPlan) -> String {
    format!("A plan saved at {} by warren {}, made against {}.", plan.created, plan.warren_version, plan.origin)
}
