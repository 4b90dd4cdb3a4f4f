//! The disjoint-path algorithms, behind one interface: the middle layer of the crate, on top of
//! [`crate::topology`] and below [`crate::routing`], which it never imports.
//!
//! Every algorithm takes its topology and an instance, checks the instance ([`check`]) and
//! returns a [`PathSystem`] (the paths, and how they were obtained: the paper's construction, a
//! documented correction, an exact search, an isomorphic network) or a [`PathError`]. Before
//! returning, the seed-family algorithms pass their answer through [`verify`]; the exact
//! minimum-cost-flow search they fall back to where a paper does not cover a case is
//! [`fallback`], and [`optimum`] computes L*, the exact optimum, on small topologies.
//!
//! [`table`] lists every algorithm with its name, paper, kind of instance, topologies and length
//! bound, and [`table::solve`] is the one place that picks an algorithm for an instance. The
//! algorithms, one module per family:
//! * [`guarded`]: the node-to-node construction of the guarded-action protocol on Q_n and
//!   EH(s,t): the source's map, the per-hop rule (decidePhase, nextPos) and the walk of the k
//!   paths;
//! * [`cube`]: the Q_n algorithms of the Bossard thesis and of Bossard and Kaneko: SPR-Gray,
//!   Cube-FTN2N, Cube-N2S, Cube-XFTN2S, Cube-S2S, HC-SPR and HC-CONTAINER;
//! * [`hhc`], [`metacube`], [`dualnet`]: HHC-N2S, HHC-iN2S, HHC-S2S and node-to-node on HHC;
//!   MC-N2N, MC-N2S and node-to-node on MC(k,1); RDN N2S and node-to-node on the recursive
//!   dual-net.
//!
//! Inside the crate, items are imported from the module that defines them, not through the
//! re-exports below (which are for callers), so that no file imports its own parent's children
//! back.

pub mod check;
pub mod cube;
pub mod dualnet;
pub mod error;
pub mod fallback;
pub mod guarded;
pub mod hhc;
pub mod instance;
pub mod live;
pub mod metacube;
pub mod optimum;
pub mod system;
pub mod table;
pub mod verify;

pub use error::PathError;
pub use instance::{Instance, Kind};
pub use system::{Construction, Path, PathSet, PathSystem, longest};
pub use table::{ALGORITHMS, Algorithm, solve};
