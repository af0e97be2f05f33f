//! What can go wrong talking to the broker, in words that say what to do.

use std::borrow::Cow;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerError {
    /// No HTTP answer at all.
    Unreachable { endpoint: String, detail: String },
    /// A request that took longer than it may (`--request-timeout`).
    TimedOut { endpoint: String, action: String, after: std::time::Duration },
    /// Something answers at the address, but not in HTTP: with `amqp`, it
    /// answered in AMQP (a RabbitMQ AMQP listener); `detail` is what the
    /// HTTP client could not read.
    NotHttp { endpoint: String, amqp: bool, detail: String },
    /// An HTTP server answers, but 404 to a broker-wide read (`path`, under
    /// `api/`): the URL is not a RabbitMQ management API.
    NotManagementApi { endpoint: String, path: String },
    /// No AMQP connection (the apply lock, fresh queue counts).
    AmqpUnreachable { endpoint: String, detail: String },
    /// The AMQP address reaches another broker than the management API
    /// (each side said as `address is cluster "name" (…)`).
    OtherBroker { management: String, amqp: String },
    /// No AMQP URL was given and none can be made from the broker's
    /// listeners (`why`).
    NoAmqpAddress { management: String, why: String },
    /// The broker answered, but the TLS handshake failed: `problem` says
    /// why in words, `help` what to do.
    Tls { endpoint: String, problem: String, help: &'static str },
    /// 401 "Login failed".
    BadCredentials { endpoint: String, user: String },
    /// 401 "Not management user": right password, no management tag.
    NotManagementUser { user: String },
    /// 401 "Access refused" on one operation: the user lacks a tag or a
    /// vhost permission for it; `needs` names it, when known.
    Forbidden { user: String, action: String, needs: Option<String> },
    /// 404 for an object that should exist (a broker-wide read is
    /// [`BrokerError::NotManagementApi`]).
    NotFound { action: String },
    /// The broker refused, with its own reason (400, 405, 406 …).
    Refused { action: String, status: u16, reason: String },
    /// The broker answered, but what it sent could not be read: not JSON,
    /// or not the shape warren reads (`reason` says where).
    Unreadable { action: String, reason: String },
    /// warren's own records on the broker cannot be used: of another
    /// format than this warren's, or malformed. `reason` names the record
    /// and says what is wrong and what to do; `help` how.
    Records { reason: String, help: String },
    /// A guarded delete (`if-empty`, `if-unused`) the broker refused: the
    /// queue holds messages or has consumers the plan did not see.
    Unsafe { action: String, reason: String },
    /// A local problem before any request: TLS files, bad settings.
    Setup(String),
}

impl fmt::Display for BrokerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokerError::Unreachable { endpoint, detail } => {
                write!(f, "cannot reach the RabbitMQ management API at {endpoint}: {detail}")
            }
            BrokerError::TimedOut { endpoint, action, after } => {
                write!(
                    f,
                    "could not {action}: the broker at {endpoint} did not answer within {} s (--request-timeout)",
                    after.as_secs_f64()
                )
            }
            BrokerError::NotHttp { endpoint, amqp: true, .. } => {
                write!(f, "{endpoint} answers in AMQP, not HTTP: it is not the RabbitMQ management API")
            }
            BrokerError::NotHttp { endpoint, amqp: false, detail } => {
                write!(f, "{endpoint} does not answer in HTTP ({detail}): it is not the RabbitMQ management API")
            }
            BrokerError::NotManagementApi { endpoint, path } => {
                write!(f, "{endpoint} is not a RabbitMQ management API: {endpoint}/api/{path} is not found (HTTP 404)")
            }
            BrokerError::AmqpUnreachable { endpoint, detail } => {
                write!(f, "cannot connect to RabbitMQ over AMQP at {endpoint}: {detail}")
            }
            BrokerError::OtherBroker { management, amqp } => {
                write!(
                    f,
                    "the AMQP connection and the management API reach different brokers: the management API at {management}, but the AMQP address {amqp}"
                )
            }
            BrokerError::NoAmqpAddress { management, why } => {
                write!(f, "no AMQP address for the broker at {management}: {why}")
            }
            BrokerError::Tls { endpoint, problem, .. } => {
                write!(f, "the TLS handshake with {endpoint} failed: {problem}")
            }
            BrokerError::BadCredentials { endpoint, user } => {
                write!(f, "{endpoint} refused the credentials of user \"{user}\" (wrong user name or password)")
            }
            BrokerError::NotManagementUser { user } => {
                write!(f, "user \"{user}\" may not use the management API: it lacks the `management` tag")
            }
            BrokerError::Forbidden { user, action, needs: None } => {
                write!(f, "user \"{user}\" is not allowed to {action}")
            }
            BrokerError::Forbidden { user, action, needs: Some(needs) } => {
                write!(f, "user \"{user}\" is not allowed to {action}: that needs {needs}")
            }
            BrokerError::NotFound { action } => write!(f, "could not {action}: not found"),
            BrokerError::Refused { action, status, reason } => {
                write!(f, "the broker refused to {action} (HTTP {status}): {reason}")
            }
            BrokerError::Unreadable { action, reason } => {
                write!(f, "could not {action}: the broker's answer cannot be read: {reason}")
            }
            BrokerError::Records { reason, .. } => f.write_str(reason),
            BrokerError::Unsafe { action, reason } => {
                write!(f, "refused to {action} for safety: the broker says {reason}")
            }
            BrokerError::Setup(s) => f.write_str(s),
        }
    }
}

impl BrokerError {
    /// What to do about it. A record's help names the record, so it is
    /// not always a fixed text.
    pub fn help(&self) -> Cow<'_, str> {
        let fixed = match self {
            BrokerError::Unreachable { .. } => {
                "check --url (or WARREN_URL), that the broker runs, and that the rabbitmq_management plugin is enabled"
            }
            BrokerError::TimedOut { .. } => {
                "a broker under load, or a vhost of many thousands of objects, can take longer: give it more with --request-timeout (or WARREN_REQUEST_TIMEOUT), as 10m, or 0 for no limit; the broker's management listener closes a long request after its own management.tcp.idle_timeout and inactivity_timeout, which must allow as long"
            }
            BrokerError::NotHttp { amqp: true, .. } => {
                "this looks like an AMQP port; --url is the management API, usually port 15672 (https 15671)"
            }
            BrokerError::NotHttp { amqp: false, .. } => {
                "--url is the RabbitMQ management API, usually port 15672 (https 15671), the address the management UI is served at"
            }
            BrokerError::NotManagementApi { .. } => {
                "--url is the address the management UI is served at, as http://HOST:15672 (https://HOST:15671 with TLS), with a path only if a proxy serves it under one; check the host, port and path, and that the rabbitmq_management plugin is enabled"
            }
            BrokerError::AmqpUnreachable { .. } => {
                "warren takes its apply lock and reads fresh queue counts over AMQP: check --amqp-url (or WARREN_AMQP_URL), its credentials, and that the port is open"
            }
            BrokerError::OtherBroker { .. } => {
                "warren takes its lock over AMQP and writes its records over the management API, so both must reach one broker: give --amqp-url (or WARREN_AMQP_URL) an AMQP address of the management API's broker (through a port-forward, forward its AMQP port too), or leave it out to use that broker's own AMQP listener"
            }
            BrokerError::NoAmqpAddress { .. } => {
                "warren takes its lock and reads fresh queue counts over AMQP: give --amqp-url (or WARREN_AMQP_URL) as amqp(s)://user:password@host:port"
            }
            BrokerError::Tls { help, .. } => help,
            BrokerError::Records { help, .. } => return Cow::Borrowed(help),
            BrokerError::BadCredentials { .. } => "check the user and password in --url or WARREN_URL",
            BrokerError::NotManagementUser { .. } => {
                "give the user the `administrator` tag (or `policymaker` for policies and parameters), or use another user"
            }
            BrokerError::Forbidden { .. } => {
                "give the user that access, or run warren as a user that has it (`rabbitmqctl list_user_permissions USER` shows its permissions, `rabbitmqctl list_users` its tags); docs/commands.md lists what each command needs"
            }
            BrokerError::NotFound { .. } => "the object changed on the broker since the plan was made; run plan again",
            BrokerError::Refused { .. } => "the broker's reason above says what it did not accept",
            BrokerError::Unreadable { .. } => {
                "check that the URL is the RabbitMQ management API itself (not a proxy's page), and that the broker is a version warren reads (3.10 or later)"
            }
            BrokerError::Unsafe { .. } => {
                "it received messages or a consumer after the plan was made; run plan to see its counts, and apply with --allow-destroy to delete it anyway"
            }
            BrokerError::Setup(_) => "check the TLS and connection options",
        };
        Cow::Borrowed(fixed)
    }
}
