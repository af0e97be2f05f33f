//! Command-line arguments. Only this module knows about clap; the rest of
//! warren sees the plain [`Command`] values it converts to.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::diff::target::Target;
use crate::render::Format;

#[derive(Debug, Parser)]
#[command(
    name = "warren",
    version,
    about = "RabbitMQ topology as code: validate, plan and apply",
    after_long_help = after_long_help()
)]
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

/// Where the broker is, and as which project warren acts there; read only
/// by commands that reach a broker. Neither has a default: a broker or a
/// project picked silently is how a plan meets the wrong broker or
/// destroys another directory's objects.
#[derive(Debug, Clone, clap::Args)]
pub struct Connection {
    /// The management API, with credentials: http(s)://user:password@host:port. No default.
    #[arg(long, global = true, env = "WARREN_URL", hide_env_values = true)]
    pub url: Option<String>,
    /// The project that owns what plan and apply create on the broker, for a directory without a
    /// warren.toml (one that has one names its project there, and this must agree).
    #[arg(long, global = true, env = "WARREN_PROJECT", value_name = "NAME", hide_env_values = true)]
    pub project: Option<String>,
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
    /// How long one request to the management API may take, its answer read in full: 90s, 10m, 1h,
    /// or 0 for no limit. A vhost of many thousands of objects can take longer to read than the
    /// default; the broker's management listener (management.tcp.idle_timeout and
    /// inactivity_timeout) must then allow as long.
    #[arg(long, global = true, env = "WARREN_REQUEST_TIMEOUT", value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
    pub request_timeout: std::time::Duration,
    /// With --env: how many environments' brokers are read at once, and applied to at once
    /// within a stage.
    #[arg(long, global = true, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub parallelism: u16,
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
    ///
    /// Each change says what becomes of one object: `+` created, `~` updated in place, `-`
    /// destroyed, `-/+` replaced, `>>` migrated live with its messages, `<<` a migration rolled
    /// back, `.` no longer managed (left on the broker), `=` another project's and `?` no
    /// project's (both never touched). The permissions warren makes from the files' `[services]` are ordinary
    /// permission and topic permission changes, each marked `# made for services "NAME"`: for each
    /// user, the least that lets its services publish, consume and declare what the files say
    /// (docs/services.md). A change that can lose messages, routes or access, permissions that
    /// grant less among them, is marked `# needs --allow-destroy` and says what it loses.
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
        /// Also save the plan to this file, for `warren apply FILE`: it holds the files' text, a
        /// digest of each live object the plan depends on, and a fingerprint of the plan (never
        /// credentials or $VARIABLE values).
        #[arg(long, value_name = "PLANFILE")]
        out: Option<PathBuf>,
        /// Plan these environments of the project (warren.toml), each on its own broker, in one
        /// report: a name, `all`, or a glob such as `prod-*`; repeatable.
        #[arg(long = "env", value_name = "ENV", conflicts_with = "state")]
        envs: Vec<String>,
        /// Limit the plan to this object and what it needs (its vhost, a binding's ends, a
        /// permission's user, a queue's dead-letter exchange, an exchange's alternate exchange):
        /// KIND:VHOST/NAME with globs, such as queue:orders/orders.work,
        /// queue:/orders.work (vhost "/") or user:alice. Repeatable. For exceptional cases only.
        #[arg(long = "target", value_name = "KIND:VHOST/NAME", value_parser = parse_target)]
        targets: Vec<Target>,
        #[command(flatten)]
        output: PlanOutput,
    },
    /// Plan, ask, and carry the plan out on the broker.
    Apply {
        /// A topology file, or a directory of them; or a saved plan (`plan --out`), which is
        /// carried out exactly, and refused (exit 4), naming what changed, if what it depends on
        /// changed on the broker since it was made: the objects the files declare, those the
        /// project owns, the bindings and policies that reach them, the project's records. Other
        /// objects, such as queues applications declare for themselves, may change meanwhile.
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Do not ask for confirmation (needed when there is no terminal).
        #[arg(long)]
        auto_approve: bool,
        /// Allow operations that can lose messages or routes, or take access away: remove users or
        /// permissions, or make permissions grant less.
        #[arg(long)]
        allow_destroy: bool,
        /// Allow changes that take away the access of the user warren connects as: deleting it,
        /// its permissions, its tags or its password, or lowering its limits. warren may not be able
        /// to finish such an apply.
        #[arg(long)]
        allow_lockout: bool,
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
        /// Carry out only the changes of this object and what it needs, as `plan --target`.
        /// Repeatable. Not with a saved plan, which records its own.
        #[arg(long = "target", value_name = "KIND:VHOST/NAME", value_parser = parse_target)]
        targets: Vec<Target>,
    },
    /// Print a saved plan (`plan --out`) as `plan` showed it when it was saved, in any format,
    /// without a broker. It shows what was reviewed; `apply PLANFILE` checks it against the broker.
    Show {
        /// The saved plan.
        #[arg(value_name = "PLANFILE")]
        plan: PathBuf,
        /// human, json, markdown or github, as `plan --format` takes them.
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Plan the removal of everything the project owns in the vhosts its files declare (the
    /// vhosts too, where no other project holds them), ask, and carry it out. Lossy removals need
    /// --allow-destroy, as in apply; what the project does not own is never touched.
    Destroy {
        /// The project's topology directory: its files name the project and the vhosts.
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Do not ask for confirmation (needed when there is no terminal).
        #[arg(long)]
        auto_approve: bool,
        /// Allow the removals that lose messages or routes, or remove users and permissions.
        #[arg(long)]
        allow_destroy: bool,
        /// Allow removing the access of the user warren connects as.
        #[arg(long)]
        allow_lockout: bool,
        /// How long to wait for another apply to finish, then exit 5.
        #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
        lock_timeout: std::time::Duration,
        /// The environment (warren.toml) to destroy in: one, by name.
        #[arg(long = "env", value_name = "ENV")]
        env: Option<String>,
    },
    /// In-flight migrations and where each stands, and the apply running now, if any.
    Status {
        /// The topology directory whose warren.toml declares the environments `--env` names
        /// (default `topology`).
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
        /// The same as PATH, as earlier versions took it.
        #[arg(long = "path", value_name = "PATH", hide = true, conflicts_with = "path")]
        path_option: Option<PathBuf>,
        /// The status of these environments' brokers, one after another: a name, `all`, or a glob.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
    },
    /// What ran on the broker, when, by whom, and how it ended (the newest runs, per vhost).
    ///
    /// Each journal (the broker's, or a project's in its vhost) numbers the runs it records
    /// (applies, adopts, aborts) one after another. A run that found nothing to do leaves no record
    /// and takes no number; a vhost's list leaves out the runs that touched only other vhosts.
    History {
        /// The topology directory whose warren.toml declares the environments `--env` names
        /// (default `topology`).
        #[arg(value_name = "PATH")]
        path: Option<PathBuf>,
        /// Only runs that touched this vhost. Repeatable.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
        /// The history of these environments' brokers, one after another: a name, `all`, or a glob.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
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
    /// Draw a topology's routing graph: exchanges and queues, bindings with their keys, and dashed
    /// dead-letter and alternate-exchange routes.
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
        /// Draw the services too: an edge from each to the exchanges it publishes to (labelled with
        /// its keys), and from each queue it consumes to it.
        #[arg(long)]
        services: bool,
    },
    /// Where a message goes: the queues it reaches and the path (each binding with its key,
    /// exchange-to-exchange hops, alternate exchanges), or why it reaches none; with
    /// --dead-letters, where a queue's dead letters go. Reads the files (or --state, or with
    /// --live the broker), and never publishes.
    ///
    /// Header values are typed: `n=1` an integer, `n=1.5` a float, `b=true` a boolean, anything
    /// else a string; `k:=JSON` takes a JSON value (`k:='"1"'` the string "1"). Headers are compared
    /// as the broker's RabbitMQ version does (3.x: 1 equals 1.0; 4.x: exactly), or the export's;
    /// from the files, as the newest (4.0). Exit 0 when the question is answered, whether or not a queue is reached; 1
    /// when the vhost, exchange or queue asked about does not exist.
    Route(Box<RouteArgs>),
    /// Print a completion script for a shell: `warren completions bash > /etc/bash_completion.d/warren`.
    ///
    /// bash, zsh and fish complete `--env` with the environments of the project: those of the
    /// directory named on the command line (one holding warren.toml), else of `topology`, else of
    /// the current directory. The script asks warren for them (`warren __complete-envs [PATH]`).
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
    /// Lay out topology files canonically: known keys in the order `import` writes them, bare keys,
    /// one blank line before each table, comments kept where they are. The order of tables and of
    /// `[[bindings]]` across a file is never changed, nor what the files mean.
    ///
    /// Rewrites the files that change and lists them; with --check changes nothing, prints a
    /// unified diff of each file that would change (only its name with -q) and exits 1 when any
    /// would. A file that is not TOML is an error at its line and column, and then no file is
    /// written. See docs/format.md, "Canonical layout".
    Fmt {
        /// A file, or a directory: every *.toml below it (but in hidden directories), warren.toml and
        /// *.test.toml included.
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Change nothing: show what would change, and exit 1 if anything would (for CI).
        #[arg(long)]
        check: bool,
    },
    /// Run the routing tests (`*.test.toml` beside the topology): where messages and dead letters
    /// go, against the files, each environment's merged topology with --env, or the broker with
    /// --live (read only: nothing is published).
    ///
    /// A failed expectation is an error at the line that states it, with the route the message
    /// took; the last line counts the tests passed and failed. Exit 1 when a test fails or a test
    /// file is not valid (`warren validate` checks them too). See docs/routing.md, "Routing tests".
    Test {
        /// A topology directory: every *.test.toml below it is run.
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// Run against this environment's topology (the base with its overlays merged over it, and
        /// the tests below its overlays too): a name, `all`, or a glob; repeatable.
        #[arg(long = "env", value_name = "ENV")]
        envs: Vec<String>,
        /// Route over the broker's topology (the broker the plan would read), not the files'.
        #[arg(long)]
        live: bool,
        /// human, json (the whole report), github (annotations, and $GITHUB_STEP_SUMMARY), gitlab
        /// (a code quality report), sarif or markdown.
        #[arg(long, value_enum, default_value_t = crate::render::test_report::TestFormat::Human)]
        format: crate::render::test_report::TestFormat,
    },
    /// The plan from one desired state to another, offline: for reviewing a pull request.
    /// With `--env A --env B`: how environment B's topology differs from A's (what the overlays change).
    ///
    /// OLD NEW is a change under review: its plan says what applying NEW over OLD would do ("would be
    /// created", "would be destroyed if applied"), and its last line is terraform's `Plan: ...`. Two
    /// environments are compared, not planned: each object is "only in A", "only in B" or "differs"
    /// (naming what cannot change in place on a broker), the last line is `Differences: ...`, and the
    /// base's warnings are shown once.
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
    /// Start a project: write warren.toml (naming the project, from --project) and a first
    /// topology file; with --state or --import, the topology an export or the broker holds now,
    /// as `warren import` writes it. Never overwrites: the directory must hold no *.toml file yet.
    Init {
        /// The directory to start the project in (created if missing).
        #[arg(default_value = "topology")]
        path: PathBuf,
        /// The first file's vhost (default "/"); with --state or --import, import only this vhost.
        /// Repeatable.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
        /// Import this definitions export instead of writing an example file (no broker needed).
        #[arg(long, value_name = "FILE", conflicts_with = "import")]
        state: Option<PathBuf>,
        /// Import what the broker (--url, WARREN_URL) holds instead of writing an example file.
        #[arg(long)]
        import: bool,
    },
    /// Write topology files (one per vhost, more for a vhost of over 1,000
    /// queues, and users.toml) for what the broker holds, or a definitions
    /// export, and warren.toml when --project names the project; with
    /// --object and --into, add those objects to a topology that exists.
    Import {
        /// Read this definitions export instead of the broker (no broker needed).
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// Import only this vhost; repeat for more. Default: every vhost.
        #[arg(long = "vhost", value_name = "VHOST")]
        vhosts: Vec<String>,
        /// The directory to write to; it must not hold *.toml files yet.
        #[arg(long, value_name = "DIR", required_unless_present = "into")]
        out: Option<PathBuf>,
        /// Import only this object into an existing topology (--into): KIND:VHOST/NAME, as
        /// `plan --target` takes it (queue:orders/orders.work, queue:/orders.work for vhost "/",
        /// user:alice; globs). Repeatable.
        #[arg(long = "object", value_name = "KIND:VHOST/NAME", value_parser = parse_target, requires = "into")]
        objects: Vec<Target>,
        /// The topology directory that --object adds to: the file that declares the object's
        /// vhost (a new one if none does). The next apply records the objects as the project's.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "vhosts"], requires = "objects")]
        into: Option<PathBuf>,
    },
}

/// The arguments of `warren route`.
#[derive(Debug, Clone, clap::Args)]
pub struct RouteArgs {
    /// A topology file, or a directory of them (every *.toml below it).
    #[arg(default_value = "topology")]
    pub path: PathBuf,
    /// The vhost; needed when the files (or the export, or the broker) hold more than one.
    #[arg(long, value_name = "VHOST")]
    pub vhost: Option<String>,
    /// The exchange the message is published to; "" (or amq.default) is the default exchange.
    /// With --dead-letters: the one the dead-lettered message was published to (default "").
    #[arg(long, value_name = "EXCHANGE", required_unless_present = "dead_letters")]
    pub exchange: Option<String>,
    /// The routing key (default ""). With --dead-letters: the key the dead-lettered message was
    /// published with (default: every key the queue's bindings take, and its name).
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// A header of the message, `k=v` (typed) or `k:=JSON`. Repeatable. Without any, a headers
    /// exchange cannot tell where the message goes (see --no-headers).
    #[arg(long = "header", value_name = "K=V")]
    pub headers: Vec<String>,
    /// The message has no headers at all.
    #[arg(long, conflicts_with = "headers")]
    pub no_headers: bool,
    /// A key of the message's CC header, routed with the key. Repeatable.
    #[arg(long, value_name = "KEY")]
    pub cc: Vec<String>,
    /// A key of the message's BCC header, routed with the key (and removed from what is delivered). Repeatable.
    #[arg(long, value_name = "KEY")]
    pub bcc: Vec<String>,
    /// Where the dead letters of this queue go, instead of a published message.
    #[arg(long, value_name = "QUEUE")]
    pub dead_letters: Option<String>,
    /// With --dead-letters: only dead letters of this reason (rejected, expired, maxlen,
    /// delivery-limit). Default: every reason the queue dead-letters for.
    #[arg(long, value_name = "REASON", requires = "dead_letters", value_parser = parse_reason)]
    pub reason: Option<crate::routing::Reason>,
    /// Read this definitions export instead of the files (no broker needed).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["live", "env"])]
    pub state: Option<PathBuf>,
    /// Read the broker (read only: nothing is published or changed), its RabbitMQ version included.
    #[arg(long)]
    pub live: bool,
    /// This environment of the project (warren.toml): its merged files, or with --live its broker.
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    /// human or json (docs/schema/route.schema.json).
    #[arg(long, value_enum, default_value_t = crate::render::route::RouteFormat::Human)]
    pub format: crate::render::route::RouteFormat,
}

fn parse_reason(s: &str) -> Result<crate::routing::Reason, String> {
    crate::routing::Reason::parse(s).ok_or_else(|| format!("\"{s}\": use rejected, expired, maxlen or delivery-limit"))
}

/// `--target KIND:VHOST/NAME`.
fn parse_target(text: &str) -> Result<Target, String> {
    Target::parse(text)
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

/// The completion script of `shell`. clap's scripts complete `--env` with
/// file names; warren's offer the project's environments instead, which
/// they ask of `warren __complete-envs [PATH]`, PATH being the project
/// directory named on the command line, if any.
pub fn completions(shell: clap_complete::Shell) -> String {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "warren", &mut out);
    let script = String::from_utf8(out).expect("completion scripts are text");
    match shell {
        Shell::Bash => {
            let script = script.replace(
                "                --env)\n                    COMPREPLY=($(compgen -f \"${cur}\"))\n",
                "                --env)\n                    compopt +o default +o bashdefault 2>/dev/null\n                    COMPREPLY=($(compgen -W \"$(_warren_envs)\" -- \"${cur}\"))\n",
            );
            format!("{BASH_ENVS}\n{script}")
        }
        Shell::Zsh => {
            let script = script.replace(":ENV:_default'", ":ENV:_warren_envs'");
            match script.rfind("\nif [ \"$funcstack[1]\" = \"_warren\" ]") {
                Some(at) => format!("{}\n{ZSH_ENVS}{}", &script[..at], &script[at..]),
                None => script,
            }
        }
        Shell::Fish => {
            let lines: Vec<String> = script
                .lines()
                .map(|l| if l.contains(" -l env ") { format!("{l} -f -a \"(__fish_warren_envs)\"") } else { l.into() })
                .collect();
            format!("{FISH_ENVS}\n{}\n", lines.join("\n"))
        }
        _ => script,
    }
}

/// The command line the completion scripts run for `--env`, which clap
/// does not see (no shell is to offer it): `warren __complete-envs [PATH]`.
pub const COMPLETE_ENVS: &str = "__complete-envs";

/// What `warren __complete-envs [PATH]` prints: the environments of the
/// project at `path`, one a line, `all` first; nothing for a project
/// without environments. Without `path`: those of `topology` (every
/// command's default), or else of the current directory.
pub fn complete_envs(path: Option<&std::path::Path>) -> String {
    use std::path::Path;
    let project = match path {
        Some(p) => crate::project::read(p),
        None => Some(crate::project::read(Path::new("topology")))
            .filter(|p| !p.environments.is_empty())
            .unwrap_or_else(|| crate::project::read(Path::new("."))),
    };
    let mut out = String::new();
    if !project.environments.is_empty() {
        out += "all\n";
    }
    for env in &project.environments {
        out += &format!("{}\n", env.name);
    }
    out
}

/// bash: the environments of the project that the command line names (a
/// word that is a directory holding warren.toml), for `--env`.
const BASH_ENVS: &str = r#"_warren_envs() {
    local w dir=""
    for w in "${COMP_WORDS[@]:1}"; do
        if [[ "$w" != -* && -f "$w/warren.toml" ]]; then dir="$w"; fi
    done
    "${COMP_WORDS[0]}" __complete-envs ${dir:+"$dir"} 2>/dev/null
}
"#;

/// zsh: the same, as a completion function.
const ZSH_ENVS: &str = r#"(( $+functions[_warren_envs] )) ||
_warren_envs() {
    # The whole command line: _arguments has shifted $words by now.
    local w dir
    local -a line envs
    line=(${(Q)${(z)BUFFER}})
    for w in ${line[2,-1]}; do
        if [[ $w != -* && -f $w/warren.toml ]]; then dir=$w; fi
    done
    envs=(${(f)"$(${line[1]} __complete-envs ${dir:+$dir} 2>/dev/null)"})
    compadd -a envs
}
"#;

/// fish: the same.
const FISH_ENVS: &str = r#"function __fish_warren_envs
    set -l tokens (commandline -op)
    set -l dir
    for t in $tokens[2..-1]
        if not string match -q -- '-*' $t; and test -f "$t/warren.toml"
            set dir $t
        end
    end
    command $tokens[1] __complete-envs $dir 2>/dev/null
end
"#;

/// What each exit status means; `Exit` (src/exit.rs) makes them.
pub const EXIT_STATUS: [(u8, &str); 6] = [
    (0, "Success; with --detailed-exitcode, no changes."),
    (
        1,
        "An error: nothing was changed on the broker, unless the message says what was. A wrong \
         command-line argument too (never clap's usual 2).",
    ),
    (2, "Success with changes: plan and diff with --detailed-exitcode."),
    (3, "apply paused: a migration waits for its old queue to drain; run apply again later."),
    (
        4,
        "Refused for safety, nothing changed: a destroy without --allow-destroy, a failed pre-flight \
         check, a stale saved plan, an object changed before its deletion, an abort past the point \
         of no return, files that change a migration in flight.",
    ),
    (5, "The lock was not obtained: another apply held it for longer than --lock-timeout; nothing changed."),
];

/// What a rollout (`apply --env` over several environments) ends with.
const ROLLOUT_STATUS: &str =
    "A rollout (apply --env over several environments) ends as its worst environment: 1, then 4, 5, 3, else 0.";

/// The variables warren reads.
pub const ENVIRONMENT: [(&str, &str); 10] = [
    (
        "WARREN_URL",
        "The management API, with credentials: http(s)://user:password@host:port (--url). No default: \
         a command that reaches a broker needs it, --url, or --env.",
    ),
    ("WARREN_AMQP_URL", "AMQP 0-9-1, for the apply lock and fresh queue counts (--amqp-url)."),
    ("WARREN_CA_CERT", "A PEM file of CA certificates to trust for HTTPS (--ca-cert)."),
    ("WARREN_CLIENT_CERT", "A PEM client certificate for HTTPS (--client-cert)."),
    ("WARREN_CLIENT_KEY", "The PEM private key of the client certificate (--client-key)."),
    (
        "WARREN_REQUEST_TIMEOUT",
        "How long one request to the management API may take: 90s, 10m, 1h, or 0 for no limit \
         (--request-timeout; default 2m).",
    ),
    (
        "WARREN_PROJECT",
        "The project name, for a directory without warren.toml (--project); one that has one names \
         its project there, and this must agree.",
    ),
    ("NO_COLOR", "Set and not empty: no colour with --color auto (the default)."),
    ("GITHUB_STEP_SUMMARY", "With --format github: the file the markdown plan or findings are appended to."),
    (
        "url_env, amqp_url_env",
        "Not variables themselves: in warren.toml, each environment names the variables that hold its \
         URLs, read with --env.",
    ),
];

/// The end of `warren --help`: the exit statuses and the environment.
fn after_long_help() -> String {
    let mut out = String::from("Exit status:\n");
    for (code, meaning) in EXIT_STATUS {
        out += &format!("  {code}  {meaning}\n");
    }
    out += &format!("  {ROLLOUT_STATUS}\n\nEnvironment:\n");
    let width = ENVIRONMENT.iter().map(|(v, _)| v.len()).max().unwrap_or(0);
    for (variable, meaning) in ENVIRONMENT {
        out += &format!("  {variable:<width$}  {meaning}\n");
    }
    out
}

/// The man page, `warren(1)`, in roff (`docs/man/warren.1`): one page,
/// every command in it, with the exit statuses and the environment.
pub fn man_page() -> String {
    use clap::CommandFactory;
    use clap_mangen::Man;
    // Each section clap_mangen renders starts with its own preamble: the page keeps the first.
    let render = |f: &dyn Fn(&mut Vec<u8>) -> std::io::Result<()>| {
        let mut out = Vec::new();
        f(&mut out).expect("writing to memory cannot fail");
        String::from_utf8(out).expect("a man page is text")
    };
    let mut cli = Cli::command();
    cli.build();
    let man = Man::new(cli.clone());
    let first = render(&|w| man.render_title(w));
    let preamble_end = first.find(".TH ").unwrap_or(0);
    let preamble = first[..preamble_end].to_string();
    let body = |text: String| text.strip_prefix(&preamble).map(str::to_string).unwrap_or(text);
    let mut page = first;
    page += &body(render(&|w| man.render_name_section(w)));
    page += &body(render(&|w| man.render_synopsis_section(w)));
    page += &body(render(&|w| man.render_description_section(w)));
    page += &body(render(&|w| man.render_options_section(w)));
    page += ".SH COMMANDS\n";
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        // The global options are said once, above.
        let own = sub.clone().mut_args(|a| if a.is_global_set() || a.get_id() == "help" { a.hide(true) } else { a });
        let man = Man::new(own);
        page += &format!(".SS \"warren {}\"\n", sub.get_name());
        let synopsis = body(render(&|w| man.render_synopsis_section(w)));
        page += synopsis.strip_prefix(".SH SYNOPSIS\n").unwrap_or(&synopsis);
        let description = body(render(&|w| man.render_description_section(w)));
        page += &description.replacen(".SH DESCRIPTION\n", ".PP\n", 1);
        let options = body(render(&|w| man.render_options_section(w)));
        page += &options.replacen(".SH OPTIONS\n", "", 1);
    }
    page += ".SH \"EXIT STATUS\"\n";
    for (code, meaning) in EXIT_STATUS {
        page += &format!(".TP\n\\fB{code}\\fR\n{}\n", roff_text(meaning));
    }
    page += &format!(".PP\n{}\n", roff_text(ROLLOUT_STATUS));
    page += ".SH ENVIRONMENT\n";
    for (variable, meaning) in ENVIRONMENT {
        page += &format!(".TP\n\\fB{}\\fR\n{}\n", roff_text(variable), roff_text(meaning));
    }
    page += &body(render(&|w| man.render_version_section(w)));
    page
}

/// `text` as roff prints it: backslashes and hyphens escaped, no line
/// taken for a request.
fn roff_text(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('-', "\\-").replace('\'', "\\*(Aq");
    if escaped.starts_with('.') { format!("\\&{escaped}") } else { escaped }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn the_request_timeout_defaults_to_the_endpoints_own() {
        let cli = super::Cli::try_parse_from(["warren", "validate"]).unwrap();
        assert_eq!(cli.connection.request_timeout, crate::broker::REQUEST_TIMEOUT);
        let cli = super::Cli::try_parse_from(["warren", "validate", "--request-timeout", "0"]).unwrap();
        assert!(cli.connection.request_timeout.is_zero(), "0 is no limit");
    }
}
