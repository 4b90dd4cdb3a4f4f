//! The disjoint-path algorithms of the recursive dual-net RDN^k(B) (the topology is
//! [`crate::topology::dualnet`]), after Li, Peng and Chu, *Node-to-Set Disjoint-Paths Routing in
//! Recursive Dual-Net*: [`routing`] RDN_routing (Algorithm 1), [`n2s`] RDN_N2S_disjoint_paths
//! (Algorithm 4 with Algorithms 2 and 3), [`n2n`] node-to-node derived from it (ours).

pub mod n2n;
pub mod n2s;
pub mod routing;
