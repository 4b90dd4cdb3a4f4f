//! A start given up because of SIGINT or SIGTERM, after stopping what it started: the CLI
//! exits with `owned::INTERRUPTED_STATUS` (130), whichever of the start and the watch above it
//! saw the signal first (a bench's start once ended with 1, its watch with 130).

#[derive(Debug, thiserror::Error)]
#[error("interrupted: {0}")]
pub struct Interrupted(pub String);
