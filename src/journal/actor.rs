//! Who runs warren, and where: `user@host`, for the lock's holder and the
//! history.

/// `user@host`. The user is the login name of the process's uid, from its
/// passwd entry, not `$USER`, which services, cron jobs and containers often
/// lack; a uid without an entry (a container's arbitrary uid) is shown as
/// the number, as `ls -l` does. The host is the kernel's host name.
pub fn actor() -> String {
    format!("{}@{}", user(), host())
}

#[cfg(unix)]
fn user() -> String {
    let uid = nix::unistd::Uid::current();
    match nix::unistd::User::from_uid(uid) {
        Ok(Some(entry)) if !entry.name.is_empty() => entry.name,
        _ => uid.to_string(),
    }
}

#[cfg(not(unix))]
fn user() -> String {
    std::env::var("USERNAME").unwrap_or_else(|_| "unknown".into())
}

fn host() -> String {
    #[cfg(unix)]
    if let Ok(name) = nix::unistd::gethostname()
        && let Some(name) = name.to_str().filter(|n| !n.is_empty())
    {
        return name.to_string();
    }
    std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "unknown".into())
}
