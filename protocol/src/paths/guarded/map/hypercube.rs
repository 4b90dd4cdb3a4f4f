//! The map for Q_n: the Sinanoglu-Karaata-AlBdaiwi protocol, which routes the Saad-Schultz paths.
//!
//! With `A` the set of positions where S and D differ (`h = |A|`):
//! * for `i` in `A`, the message leaves by dimension `i` and flips the rest of `A` cyclically
//!   from `i`; it enters D from `Pd = D ^ e_prev(i)`, `prev` the cyclic predecessor of `i` in `A`.
//!   Length `h`. The node sets are cyclic intervals of `A` starting at distinct positions, so the
//!   paths are disjoint.
//! * for `q` not in `A`, the message leaves by `q`, flips all of `A`, and flips `q` back on the
//!   last hop (`Pd = D ^ e_q`). Length `h + 2`. Every inner node contains `q`, so these paths
//!   meet neither each other nor the first kind.
//!
//! That is `h` paths of length `h` and `n - h` of length `h + 2`, the optimum.

use super::{Plan, cyclic_prev};
use crate::NodeId;
use crate::paths::guarded::route::Anchors;
use crate::topology::hypercube::Hypercube;

pub(super) fn map(q: Hypercube, src: NodeId, dst: NodeId) -> Vec<Plan> {
    let diff = src.0 ^ dst.0;
    (0..q.n)
        .map(|i| {
            let first = src.flip(i);
            let anchors = Anchors { fa: i as u8, fb: 0 };
            let pd = if first == dst {
                src
            } else if diff >> i & 1 == 1 {
                dst.flip(cyclic_prev(diff, i))
            } else {
                dst.flip(i)
            };
            Plan {
                first,
                pd,
                via: None,
                anchors,
            }
        })
        .collect()
}
