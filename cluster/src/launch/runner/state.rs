//! The state of one node's runner, as every kind of cluster reports it.

/// The runner of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runner {
    /// Running (a container: healthy, or without a verdict yet).
    Alive(String),
    /// Not running, and on its way: a Swarm task Swarm means to run that is not running yet
    /// (being scheduled, starting, or waiting for its host).
    Starting(String),
    /// Not running: why.
    Dead(String),
}

impl Runner {
    pub fn is_alive(&self) -> bool {
        matches!(self, Runner::Alive(_))
    }

    pub fn is_dead(&self) -> bool {
        matches!(self, Runner::Dead(_))
    }

    pub fn describe(&self) -> &str {
        match self {
            Runner::Alive(s) | Runner::Starting(s) | Runner::Dead(s) => s,
        }
    }
}
