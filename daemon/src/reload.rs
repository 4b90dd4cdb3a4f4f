//! The configuration in force, and reloading it: SIGHUP or a reload request reads the file
//! again (with the same flags), applies what may change without a restart
//! ([`crate::config::RELOADABLE`]), and says what changed and what waits for a restart. A file
//! with any problem changes nothing.

use crate::config::{ConfigError, DaemonArgs, NodeConfig, RELOADABLE};
use crate::logging;
use cuberoute_protocol::wire::control::{ConfigStatus, Reload};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use tokio::sync::Semaphore;

#[derive(Debug)]
pub struct Settings {
    /// The daemon's flags: a reload resolves the file with them again.
    args: DaemonArgs,
    /// The configuration in force: as started, with the reloadable settings as last reloaded.
    running: Mutex<NodeConfig>,
    /// `buffers.requests`, the permits of [`Settings::requests`].
    requests_limit: AtomicUsize,
    /// One permit per control request in progress.
    pub requests: Arc<Semaphore>,
    chaos_allowed: AtomicBool,
}

impl Settings {
    pub fn new(config: &NodeConfig, args: DaemonArgs) -> Settings {
        Settings {
            args,
            running: Mutex::new(config.clone()),
            requests_limit: AtomicUsize::new(config.buffers.requests),
            requests: Arc::new(Semaphore::new(config.buffers.requests)),
            chaos_allowed: AtomicBool::new(config.chaos_allowed),
        }
    }

    pub fn requests_limit(&self) -> usize {
        self.requests_limit.load(Relaxed)
    }

    pub fn chaos_allowed(&self) -> bool {
        self.chaos_allowed.load(Relaxed)
    }

    /// The configuration in force, as the status reports it.
    pub fn status(&self) -> ConfigStatus {
        let c = self.running.lock().expect("settings lock");
        ConfigStatus {
            listen: c.listen.to_string(),
            control_listen: c.control_listen.to_string(),
            metrics_listen: c.metrics_listen.map(|a| a.to_string()),
            log_format: c.log_format.as_str().to_string(),
            log_level: c.log_level.clone(),
            chaos_allowed: c.chaos_allowed,
            input_buffer: c.buffers.input as u64,
            link_buffer: c.buffers.link as u64,
            output_buffer: c.buffers.output as u64,
            requests: c.buffers.requests as u64,
            memory_mib: (c.buffers.memory_bytes >> 20) as u64,
            nice: c.nice,
            seal: c.seal,
        }
    }

    /// Read the configuration again and apply what may change now.
    pub fn reload(&self) -> Result<Reload, ConfigError> {
        let new = NodeConfig::resolve(&self.args)?;
        let mut running = self.running.lock().expect("settings lock");
        let mut reload = Reload::default();
        for ((key, old), (_, value)) in running.settings().into_iter().zip(new.settings()) {
            if old == value {
                continue;
            }
            let line = format!("{key}: {old} -> {value}");
            if RELOADABLE.contains(&key) {
                reload.changed.push(line);
            } else {
                reload.needs_restart.push(line);
            }
        }
        if new.log_level != running.log_level || new.log_format != running.log_format {
            logging::set_logging(&new.log_level, new.log_format).map_err(|message| {
                ConfigError {
                    key: "log_level".into(),
                    message,
                }
            })?;
            running.log_level = new.log_level;
            running.log_format = new.log_format;
        }
        if new.buffers.requests != running.buffers.requests {
            self.resize_requests(new.buffers.requests);
            running.buffers.requests = new.buffers.requests;
        }
        running.chaos_allowed = new.chaos_allowed;
        self.chaos_allowed.store(new.chaos_allowed, Relaxed);
        Ok(reload)
    }

    /// Give the request semaphore `limit` permits: more at once, fewer as requests in progress
    /// end.
    fn resize_requests(&self, limit: usize) {
        let old = self.requests_limit.swap(limit, Relaxed);
        if limit > old {
            self.requests.add_permits(limit - old);
        } else {
            let fewer = old - limit;
            let forgotten = self.requests.forget_permits(fewer);
            if forgotten < fewer {
                let requests = self.requests.clone();
                tokio::spawn(async move {
                    if let Ok(permits) = requests
                        .acquire_many_owned((fewer - forgotten) as u32)
                        .await
                    {
                        permits.forget();
                    }
                });
            }
        }
    }
}
