//! Command-line arguments. Only this module knows about clap; the rest of
//! warren sees the plain [`Command`] values it converts to.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::render::Format;

#[derive(Debug, Parser)]
#[command(name = "warren", version, about = "RabbitMQ topology as code: validate, plan and apply")]
pub struct Cli {
    /// When to use colour in output (NO_COLOR is honoured with `auto`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print more detail: apply's steps as they start and end, with their durations.
    #[arg(short, long, global = true, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Print only errors and the final summary.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(flatten)]
    pub connection: Connection,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Where the broker is; read only by commands that reach it.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// The management API, with credentials: http(s)://user:password@host:port.
    #[arg(
        long,
        global = true,
        env = "WARREN_URL",
        default_value = "http://guest:guest@127.0.0.1:15672",
        hide_env_values = true,
        hide_default_value = true
    )]
    pub url: String,
    /// AMQP 0-9-1, for the apply lock and fresh queue counts: amqp(s)://user:password@host:port[/vhost].
    /// Default: the management host and credentials with the port of the broker's own AMQP listener,
    /// as the management API reports it (amqps only, behind https). Either way warren refuses
    /// (exit 1) when it reaches another broker than the management API (another cluster name).
    #[arg(long, global = true, env = "WARREN_AMQP_URL", hide_env_values = true)]
    pub amqp_url: Option<String>,
    /// A PEM file of CA certificates to trust for HTTPS.
    #[arg(long, global = true, env = "WARREN_CA_CERT", value_name = "FILE", hide_env_values = true)]
    pub ca_cert: Option<PathBuf>,
    /// A PEM client certificate for HTTPS (with --client-key, or key included).
    #[arg(long, global = true, env = "WARREN_CLIENT_CERT", value_name = "FILE", hide_env_values = true)]
    pub client_cert: Option<PathBuf>,
    /// The PEM private key of --client-cert.
    #[arg(long, global = true, env = "WARREN_CLIENT_KEY", value_name = "FILE", hide_env_values = true)]
    pub client_key: Option<PathBuf>,
}

/// How a plan is shown; shared by `plan` and `diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct PlanOutput {
    /// human (terraform-style), json (documented schema), markdown (a pull-request comment) or github
    /// (the human plan with an annotation per error and warning; the markdown plan in $GITHUB_STEP_SUMMARY).
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Exit 2 when there are changes, 0 when there are none, 1 on error.
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Destroy and recreate this queue when its immutable properties change
    /// (loses its messages; apply needs --allow-destroy). Repeatable.
    #[arg(long, value_name = "QUEUE")]
    pub replace: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare the files with the live broker, or with a definitions export, and show what apply would do.
    Plan {
        /// A topology file, or a directory of them (every *.toml below it).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Compare with this definitions export instead of the broker (no broker needed).
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// With --state: read an export of one vhost (GET /api/definitions/{vhost}, whose items name
        /// no vhost) as this vhost's. Without it, such an export is read as the one vhost the files
        /// declare.
        #[arg(long, value_name = "VHOST", requires = "state")]
        vhost: Option<String>,
        /// Also save the plan to this file, for `warren apply FILE`: it holds the files' text
        /// and fingerprints of the live state and of the plan (never credentials or $VARIABLE values).
        #[arg(long, value_name = "PLANFILE")]
        out: Option<PathBuf>,
        /// Plan these environments of the project (warren.toml), each on its own broker, in one
        /// report: a name, `all`, or a glob such as `prod-*`; repeatable.
        #[arg(long = "env", value_name = "ENV", conflicts_with = "state")]
        envs: Vec<String>,
        #[command(flatten)]
        output: PlanOutput,
    },
    /// Plan, ask, and carry the plan out on the broker.
    Apply {
        /// A topology file, or a directory of them; or a saved plan (`plan --out`), which is
        /// carried out exactly, and refused (exit 4) if the broker changed since it was made.
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Do not ask for confirmation (needed when there is no terminal).
        #[arg(long)]
        auto_approve: bool,
        /// Allow operations that can lose messages or routes.
        #[arg(long)]
        allow_destroy: bool,
        /// Destroy and recreate this queue when its immutable properties change (lossy). Repeatable.
        /// Not with a saved plan, which records its own.
        #[arg(long, value_name = "QUEUE")]
        replace: Vec<String>,
        /// How long a migration waits in this run for the old queue to drain, then pauses (exit 3): 90s, 10m, 1h.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        drain_timeout: std::time::Duration,
        /// How long to wait for another apply to finish (one apply at a time per broker), then exit 5: 0s, 90s, 10m.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        lock_timeout: std::time::Duration,
        /// Apply to these environments of the project (warren.toml): a name, `all`, or a glob;
        /// repeatable. Several roll out stage by stage in [deploy] order, and stop before the next
        /// stage when an environment of a stage failed or paused.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
    },
    /// In-flight migrations and where each stands, and the apply running now, if any.
    Status {
        /// The topology directory whose environments `--env` names.
        #[arg(long, value_name = "PATH", default_value = "topology")]
        path: PathBuf,
        /// The status of these environments' brokers, one after another: a name, `all`, or a glob.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
    },
    /// What ran on the broker, when, by whom, and how it ended (the newest runs, per vhost).
    History {
        /// Only runs that touched this vhost. Repeatable.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
    },
    /// Roll an in-flight migration back to where it started, while traffic flows (before its point of no return).
    Abort {
        /// The migration's id, as `warren status` shows it.
        id: String,
        /// Do not ask for confirmation (needed when there is no terminal).
        #[arg(long)]
        auto_approve: bool,
        /// How long to wait for another apply to finish, then exit 5.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        lock_timeout: std::time::Duration,
    },
    /// Take over, in warren's records only, the objects these files declare that another project owns.
    Adopt {
        /// A topology directory (its warren.toml names the project that takes over).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// The project that owns them now.
        #[arg(long, value_name = "PROJECT")]
        from: String,
        /// Do not ask for confirmation (needed when there is no terminal).
        #[arg(long)]
        auto_approve: bool,
        /// How long to wait for another apply to finish, then exit 5.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        lock_timeout: std::time::Duration,
    },
    /// Check the files, and with --live the broker, against every lint rule (`--rules` lists them).
    Lint {
        /// A topology file, or a directory of them (every *.toml below it).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Also read the broker the plan would read: who consumes each queue, the deprecated
        /// features in use, and the static rules at the broker's version.
        #[arg(long)]
        live: bool,
        /// Lint these environments' merged topologies (with --live, their brokers): a name,
        /// `all`, or a glob; repeatable.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
        /// human, json (every finding, those an exception allows included), github (annotations, and
        /// $GITHUB_STEP_SUMMARY) or gitlab (a code quality report).
        #[arg(long, value_enum, default_value_t = crate::render::lint::LintFormat::Human)]
        format: crate::render::lint::LintFormat,
        /// `--deny warnings`: exit 1 on warnings too.
        #[arg(long, value_name = "WHAT", value_parser = ["warnings"])]
        deny: Option<String>,
        /// List every rule: its code, default severity, what it reads, and what it finds.
        #[arg(long, conflicts_with_all = ["live", "envs", "deny"])]
        rules: bool,
    },
    /// Draw a topology's routing graph: exchanges and queues, and bindings with their keys.
    Graph {
        /// A topology file, or a directory of them (every *.toml below it).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Only this vhost.
        #[arg(long, value_name = "VHOST")]
        vhost: Option<String>,
        /// mermaid (a flowchart GitHub and GitLab draw in markdown) or dot (Graphviz).
        #[arg(long, value_enum, default_value_t = crate::render::graph::GraphFormat::Mermaid)]
        format: crate::render::graph::GraphFormat,
    },
    /// Print a completion script for a shell: `warren completions bash > /etc/bash_completion.d/warren`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Parse and check topology files: their errors, and a count of the lint's warnings (`warren lint`
    /// lists them); no broker needed.
    Validate {
        /// A topology file, or a directory of them (every *.toml below it).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// human, json (the errors; the summary counts every finding), github (annotations, and
        /// $GITHUB_STEP_SUMMARY) or gitlab (a code quality report).
        #[arg(long, value_enum, default_value_t = crate::render::lint::LintFormat::Human)]
        format: crate::render::lint::LintFormat,
        /// Also check this environment's topology: the base with its overlays merged over it.
        /// A name, `all`, or a glob such as `prod-*`; repeatable.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
    },
    /// The plan from one desired state to another, offline: for reviewing a pull request.
    /// With `--env A --env B`: how environment B's topology differs from A's (what the overlays change).
    Diff {
        /// OLD NEW: the topology before the change (e.g. the main branch's checkout) and after it.
        /// With --env: the topology directory (default `topology`).
        #[arg(value_name = "PATH", num_args = 0..=2)]
        paths: Vec<PathBuf>,
        /// Two environments of the project to compare, the first as OLD.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
        #[command(flatten)]
        output: PlanOutput,
    },
    /// Write the topology as a RabbitMQ definitions file, for
    /// `rabbitmqctl import_definitions`; no broker needed.
    Export {
        /// A topology file, or a directory of them (every *.toml below it).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Write the definitions to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Export this environment's topology: the base with its overlays merged over it.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
    },
    /// Write topology files (one per vhost, more for a vhost of over 1,000
    /// queues, and users.toml) for what the broker holds, or a definitions
    /// export.
    Import {
        /// Read this definitions export instead of the broker (no broker needed).
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// Import only this vhost; repeat for more. Default: every vhost.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
        /// The directory to write to; it must not hold *.toml files yet.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// `90s`, `10m`, `1h`, or plain seconds.
pub(crate) fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = digits.parse().map_err(|_| format!("\"{s}\" is not a duration such as 90s, 10m or 1h"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "ms" => return Ok(std::time::Duration::from_millis(n)),
        _ => return Err(format!("\"{s}\": use s, m or h, as in 90s, 10m or 1h")),
    };
    Ok(std::time::Duration::from_secs(secs))
}

/// The command reference (`docs/commands.md`), made from these definitions
/// so that it cannot go stale: a test compares the file with it.
pub fn reference() -> String {
    use clap::CommandFactory;
    let mut cli = Cli::command().term_width(100);
    let mut out = String::from(
        "# Command reference\n\nGenerated from warren's command-line definition (`src/cli.rs`); a test fails when\nthis file differs from it. Rewrite it with\n`WARREN_UPDATE_DOCS=1 cargo test --test suite docs::`.\n\n",
    );
    out += &format!("## warren\n\n```text\n{}\n```\n", cli.render_long_help().to_string().trim_end());
    for sub in cli.get_subcommands_mut() {
        let name = sub.get_name().to_string();
        let help = sub.clone().bin_name(format!("warren {name}")).render_long_help().to_string();
        out += &format!("\n## warren {name}\n\n```text\n{}\n```\n", help.trim_end());
    }
    // clap pads blank lines of a help text; a file keeps none.
    out.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n"
}

/// The completion script of `shell`.
pub fn completions(shell: clap_complete::Shell) -> String {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "warren", &mut out);
    String::from_utf8(out).expect("completion scripts are text")
}

/// The man page, `warren(1)`, in roff (`docs/man/warren.1`).
pub fn man_page() -> String {
    use clap::CommandFactory;
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("a man page is text")
}
