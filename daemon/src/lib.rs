//! The cuberoute daemon (issue: daemon and local cluster). Empty until that issue lands.
