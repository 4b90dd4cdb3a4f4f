//! Shortest paths in a graph given by a neighbour function, by breadth-first search: the
//! detours the seed-family algorithms take around nodes already used.

use std::collections::{HashMap, VecDeque};

/// A shortest path from `from` to the first node `goal` accepts, moving by `next` through nodes
/// `enter` accepts (a goal node is entered whatever `enter` says). `None` if no goal is
/// reachable.
pub fn shortest_path<I: IntoIterator<Item = u64>>(
    from: u64,
    goal: impl Fn(u64) -> bool,
    enter: impl Fn(u64) -> bool,
    next: impl Fn(u64) -> I,
) -> Option<Vec<u64>> {
    let mut prev: HashMap<u64, u64> = HashMap::from([(from, from)]);
    let mut queue = VecDeque::from([from]);
    while let Some(u) = queue.pop_front() {
        if goal(u) {
            let mut path = vec![u];
            let mut at = u;
            while at != from {
                at = prev[&at];
                path.push(at);
            }
            path.reverse();
            return Some(path);
        }
        for w in next(u) {
            if !prev.contains_key(&w) && (enter(w) || goal(w)) {
                prev.insert(w, u);
                queue.push_back(w);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_a_blocked_node_of_a_ring() {
        let ring = |v: u64| [(v + 1) % 8, (v + 7) % 8];
        assert_eq!(
            shortest_path(0, |v| v == 2, |_| true, ring),
            Some(vec![0, 1, 2])
        );
        assert_eq!(
            shortest_path(0, |v| v == 2, |v| v != 1, ring),
            Some(vec![0, 7, 6, 5, 4, 3, 2])
        );
        assert_eq!(
            shortest_path(0, |v| v == 2, |v| v != 1 && v != 5, ring),
            None
        );
        assert_eq!(shortest_path(3, |v| v == 3, |_| true, ring), Some(vec![3]));
    }
}
