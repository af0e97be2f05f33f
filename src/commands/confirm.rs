//! The terraform-style confirmation of a writing command: only `yes`
//! approves, and without a terminal nothing is asked and nothing done.

use std::io::{BufRead, IsTerminal, Write};

/// Asks `question` on the terminal; `verb` names the command in the
/// messages (`apply`, `abort`). True only for `yes`.
pub(super) fn confirm(question: &str, verb: &str) -> bool {
    if !std::io::stdin().is_terminal() {
        eprintln!("Nothing was changed: there is no terminal to confirm on; pass --auto-approve to {verb} unattended.");
        return false;
    }
    eprint!("\n{question}\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    let yes = answer.trim() == "yes";
    if !yes {
        let mut cancelled = verb.to_string();
        cancelled[..1].make_ascii_uppercase();
        eprintln!("\n{cancelled} cancelled. Nothing was changed.");
    }
    yes
}
