//! Cluster launcher, certificates and chaos tooling. Empty until the daemon issue lands.
