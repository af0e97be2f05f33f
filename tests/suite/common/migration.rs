//! The migration cases of `tests/migrations` (see its README): each
//! folder's topology before (`v1.toml`) and after (`v2.toml`), and its
//! `case.toml`: the traffic the tests send through the migration, and the
//! refusal a case expects.

use std::time::Duration;

use serde::Deserialize;

use super::root;
use super::traffic::{Publish, Route};

/// A migration case: the topology before and after (`{V}` stands for the
/// vhost), and what its `case.toml` says.
pub(crate) struct MigrationCase {
    name: String,
    pub v1: String,
    pub v2: String,
    traffic: Option<CaseTraffic>,
    /// The pre-flight refusal (a diagnostic code) that applying v2 over v1
    /// meets, if any.
    pub refused: Option<String>,
}

/// The traffic of a case, its `[traffic]`: its routes, and figures that a
/// test changes where its point needs others.
#[derive(Clone)]
pub(crate) struct CaseTraffic {
    /// The routes in turn, at `rate` messages a second.
    pub publish: Publish,
    /// The per-message delay of the old queue's consumer.
    pub old_delay: Duration,
    /// How long traffic runs before the migration, the backlog building.
    pub warmup: Duration,
}

/// `case.toml` as written; the defaults are those of most cases.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    traffic: Option<TrafficFile>,
    refused: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrafficFile {
    /// Where messages go, unless a route names its own exchange.
    #[serde(default)]
    exchange: String,
    /// Exactly one of: routing keys in turn, header sets in turn (empty
    /// key), or (exchange, key) routes in turn.
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    headers: Vec<toml::Table>,
    #[serde(default)]
    routes: Vec<RouteFile>,
    #[serde(default = "default_rate")]
    rate: u32,
    #[serde(default = "default_old_delay_ms")]
    old_delay_ms: u64,
    #[serde(default = "default_warmup_ms")]
    warmup_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteFile {
    exchange: String,
    key: String,
}

fn default_rate() -> u32 {
    150
}
fn default_old_delay_ms() -> u64 {
    10
}
fn default_warmup_ms() -> u64 {
    2000
}

impl TrafficFile {
    fn into_traffic(self, name: &str) -> CaseTraffic {
        let given = [!self.keys.is_empty(), !self.headers.is_empty(), !self.routes.is_empty()];
        assert_eq!(given.iter().filter(|g| **g).count(), 1, "{name}/case.toml: one of keys, headers, routes");
        let routes: Vec<Route> = if !self.keys.is_empty() {
            self.keys.into_iter().map(|key| Route { key, ..Route::default() }).collect()
        } else if !self.headers.is_empty() {
            let header = |(k, v): (String, toml::Value)| {
                let v =
                    v.as_str().unwrap_or_else(|| panic!("{name}/case.toml: header {k} is not a string")).to_string();
                (k, v)
            };
            self.headers
                .into_iter()
                .map(|set| Route { headers: set.into_iter().map(header).collect(), ..Route::default() })
                .collect()
        } else {
            self.routes
                .into_iter()
                .map(|r| Route { key: r.key, exchange: Some(r.exchange), ..Route::default() })
                .collect()
        };
        let exchange = match &routes[0].exchange {
            Some(x) if self.exchange.is_empty() => x.clone(),
            _ => self.exchange,
        };
        CaseTraffic {
            publish: Publish::routes(&exchange, routes).rate(self.rate),
            old_delay: Duration::from_millis(self.old_delay_ms),
            warmup: Duration::from_millis(self.warmup_ms),
        }
    }
}

/// The migration case in `tests/migrations/NAME`.
pub(crate) fn migration(name: &str) -> MigrationCase {
    let folder = root().join("tests/migrations").join(name);
    let read = |file: &str| std::fs::read_to_string(folder.join(file));
    let version = |v: &str| read(v).unwrap_or_else(|e| panic!("{}/{v}: {e}", folder.display()));
    let case: CaseFile = match read("case.toml") {
        Ok(text) => toml::from_str(&text).unwrap_or_else(|e| panic!("{name}/case.toml: {e}")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => CaseFile::default(),
        Err(e) => panic!("{name}/case.toml: {e}"),
    };
    let case = MigrationCase {
        name: name.to_string(),
        v1: version("v1.toml"),
        v2: version("v2.toml"),
        traffic: case.traffic.map(|t| t.into_traffic(name)),
        refused: case.refused,
    };
    if case.refused.is_none() {
        case.assert_routes_alike();
    }
    case
}

impl MigrationCase {
    /// The case's traffic; a case without `[traffic]` fails the test.
    pub(crate) fn traffic(&self) -> CaseTraffic {
        self.traffic.clone().unwrap_or_else(|| panic!("tests/migrations/{}/case.toml has no [traffic]", self.name))
    }

    /// The case's publisher: its routes at its rate.
    pub(crate) fn publish(&self) -> Publish {
        self.traffic().publish
    }

    /// A migration moves no message elsewhere: the plan of v2 over v1 has
    /// no routing change but that of the queues replaced and of the
    /// bindings the case changes beside it (the new queue
    /// takes the old one's name), whatever the migration adds or drops.
    pub(crate) fn assert_routes_alike(&self) {
        let case = self.in_vhost("/");
        let dir = tempfile::tempdir().unwrap();
        for (side, text) in [("v1", &case.v1), ("v2", &case.v2)] {
            std::fs::create_dir_all(dir.path().join(side)).unwrap();
            std::fs::write(dir.path().join(side).join("topology.toml"), text).unwrap();
        }
        let (v1, v2) = (dir.path().join("v1"), dir.path().join("v2"));
        let run = super::warren(&["diff", v1.to_str().unwrap(), v2.to_str().unwrap(), "--format", "json"]);
        let plan: serde_json::Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}{}", self.name, run.stdout, run.stderr));
        for e in plan["errors"].as_array().unwrap() {
            assert_eq!(e["code"].as_str(), self.refused.as_deref(), "{}: refused\n{}", self.name, run.stdout);
        }
        let changes = plan["changes"].as_array().unwrap();
        let mut replaced: Vec<&str> = changes.iter().filter_map(|c| c["migration"]["replaces"].as_str()).collect();
        assert!(!replaced.is_empty(), "{}: the plan migrates nothing\n{}", self.name, run.stdout);
        // Bindings the case changes beside the migration route as they say.
        let bound = changes.iter().filter(|c| c["kind"] == "binding");
        replaced.extend(bound.filter_map(|c| c["after"]["queue"].as_str().or(c["before"]["queue"].as_str())));
        let empty = Vec::new();
        for x in plan["routing"].as_array().unwrap_or(&empty) {
            for class in x["classes"].as_array().unwrap() {
                let names = |side: &str| -> Vec<String> {
                    class[side].as_array().unwrap().iter().map(|q| q.as_str().unwrap().to_string()).collect()
                };
                for q in names("stop").iter().chain(&names("start")) {
                    assert!(
                        replaced.contains(&q.as_str()),
                        "{}: the migration moves keys {} of exchange {} to or from queue {q}:\n{}",
                        self.name,
                        class["description"],
                        x["exchange"],
                        run.stdout
                    );
                }
            }
            assert!(x["cannot_tell"].is_null(), "{}: {x}", self.name);
        }
    }

    /// The case with `{V}` replaced by `vhost`.
    pub(crate) fn in_vhost(&self, vhost: &str) -> MigrationCase {
        MigrationCase {
            name: self.name.clone(),
            v1: self.v1.replace("{V}", vhost),
            v2: self.v2.replace("{V}", vhost),
            traffic: self.traffic.clone(),
            refused: self.refused.clone(),
        }
    }
}
