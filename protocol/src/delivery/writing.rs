//! The destination's reliable sets being written to its store. A set whole here is
//! acknowledged only once its write is durable; a piece of a later attempt that arrives
//! meanwhile earns no acknowledgement of its own: when the write is done, the greatest attempt
//! that came is acknowledged (docs/delivery.md, "At the destination").
//!
//! Pure state, like the inbox: the caller starts a write, asks here before acknowledging, and
//! says when the write is done.

use super::envelope::{SetKey, Shape};
use std::collections::BTreeMap;

/// The sets being written, each with the greatest attempt that arrived for it.
#[derive(Clone, Default, PartialEq, Eq, Hash, Debug)]
pub struct Writing {
    sets: BTreeMap<(SetKey, Shape), u32>,
}

impl Writing {
    /// `set` (in `shape`), whole with a piece of `attempt`, goes to the store.
    pub fn begin(&mut self, set: SetKey, shape: Shape, attempt: u32) {
        let latest = self.sets.entry((set, shape)).or_insert(attempt);
        *latest = (*latest).max(attempt);
    }

    /// Whether the acknowledgement a piece of `attempt` of `set` earns waits for the set's
    /// write: yes while it is being written (the attempt is remembered, if greater), no
    /// otherwise.
    pub fn hold(&mut self, set: &SetKey, shape: Shape, attempt: u32) -> bool {
        match self.sets.get_mut(&(*set, shape)) {
            Some(latest) => {
                *latest = (*latest).max(attempt);
                true
            }
            None => false,
        }
    }

    /// The write of `set` is done: the attempt to acknowledge, the greatest that arrived while
    /// it was written (1 for a set not being written).
    pub fn finish(&mut self, set: &SetKey, shape: Shape) -> u32 {
        self.sets.remove(&(*set, shape)).unwrap_or(1)
    }

    /// Sets being written.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::super::mode::{Mode, Scheme};
    use super::*;
    use crate::NodeId;

    fn set(seq: u64) -> SetKey {
        SetKey {
            src: NodeId(1),
            seq,
            sent_at_us: 9,
        }
    }

    const SHAPE: Shape = Shape {
        mode: Mode {
            scheme: Scheme::Copies,
            reliable: true,
        },
        k: 2,
        len: 4,
    };

    /// While a set is written, later attempts wait and the greatest is acknowledged at the
    /// end; an earlier one that comes late does not lower it; once done, nothing is held.
    #[test]
    fn the_greatest_attempt_is_acknowledged_when_the_write_is_done() {
        let mut w = Writing::default();
        w.begin(set(1), SHAPE, 2);
        assert!(w.hold(&set(1), SHAPE, 4));
        assert!(w.hold(&set(1), SHAPE, 3));
        assert!(!w.hold(&set(2), SHAPE, 1), "not being written");
        let other = Shape { len: 5, ..SHAPE };
        assert!(!w.hold(&set(1), other, 5), "another shape is another set");
        assert_eq!(w.len(), 1);
        assert_eq!(w.finish(&set(1), SHAPE), 4);
        assert!(w.is_empty());
        assert!(!w.hold(&set(1), SHAPE, 5), "durable: acknowledged at once");
        assert_eq!(w.finish(&set(1), SHAPE), 1);
    }
}
