//! Running a model within a budget (stateright's breadth-first checker on every core), and the
//! report: what was explored, how it stopped, each property's outcome, each violation with the
//! trace that replays it, and what the model measured.

use serde::Serialize;
use stateright::{Checker, Expectation, HasDiscoveries, Model};
use std::fmt::Debug;
use std::hash::Hash;
use std::time::Instant;

/// A model `cuberoute check` runs: stateright's [`Model`], with what a report and a trace say of
/// it.
pub trait Checked: Model + Send + Sync + Sized + 'static
where
    Self::State: Hash + Send + Sync + Debug + Clone + 'static,
    Self::Action: Debug + Clone + Serialize,
{
    type Params: Serialize + Clone;
    /// What a trace starts from: the initial state, as a trace writes it.
    type Initial: Serialize;

    fn name(&self) -> &'static str;
    fn params(&self) -> &Self::Params;
    fn initial(&self, state: &Self::State) -> Self::Initial;
    /// What exploring the model measured, beside the counts of states.
    fn figures(&self) -> serde_json::Value;
}

/// How much a run may explore.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// The checker stops once it has generated this many states. (No time budget: stateright's
    /// own timeout holds its job market's lock while it sleeps, a second at a time, which stalls
    /// every checker thread; a budget of states bounds the time as well.)
    pub max_states: usize,
    /// Stop at the first violation (a mutant's run: catching it is the point).
    pub stop_at_violation: bool,
}

/// How a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// Every reachable state explored.
    Exhausted,
    /// The budget of states ran out first: what was explored holds, the rest is not known.
    Budget,
    /// At a violation, as asked.
    Violation,
}

/// One property and what became of it.
#[derive(Clone, Debug, Serialize)]
pub struct PropertyOutcome {
    pub name: &'static str,
    /// `always` (a violation is a counterexample) or `sometimes` (an example is expected).
    pub kind: &'static str,
    /// Always: no state broke it. Sometimes: a state showed it.
    pub holds: bool,
}

/// A trace: the model's parameters, the initial state and the steps from it to where a
/// property broke.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Trace<P, I, S> {
    pub params: P,
    pub initial: I,
    pub steps: Vec<S>,
}

/// A property broken, and how to get there.
#[derive(Clone, Debug, Serialize)]
pub struct Violation<T> {
    pub property: &'static str,
    pub trace: T,
}

/// What a run explored and found.
#[derive(Clone, Debug, Serialize)]
pub struct Report<P, I, S> {
    pub model: &'static str,
    pub params: P,
    pub stopped: Stopped,
    pub initial_states: usize,
    /// States generated (a state reached twice counts twice) and distinct.
    pub states: usize,
    pub unique_states: usize,
    /// The most steps from an initial state to any state explored.
    pub max_depth: usize,
    pub seconds: f64,
    pub threads: usize,
    pub properties: Vec<PropertyOutcome>,
    pub violations: Vec<Violation<Trace<P, I, S>>>,
    pub figures: serde_json::Value,
}

impl<P, I, S> Report<P, I, S> {
    /// Whether a property broke.
    pub fn violated(&self) -> bool {
        !self.violations.is_empty()
    }
}

/// Explore `model` within `budget`, breadth first on every core.
pub fn check<M>(model: M, budget: Budget) -> Report<M::Params, M::Initial, M::Action>
where
    M: Checked,
    M::State: Hash + Send + Sync + Debug + Clone + 'static,
    M::Action: Debug + Clone + Serialize,
{
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let initial_states = model.init_states().len();
    let started = Instant::now();
    let finish = if budget.stop_at_violation {
        HasDiscoveries::AnyFailures
    } else {
        HasDiscoveries::AllFailures
    };
    // A mutant's `hop` may panic: each is caught and is a violation of its own; the default
    // hook would print every one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let checker = model
        .checker()
        .threads(threads)
        .target_state_count(budget.max_states)
        .finish_when(finish)
        .spawn_bfs()
        .join();
    std::panic::set_hook(hook);
    let seconds = started.elapsed().as_secs_f64();
    let model = checker.model();
    let discoveries = checker.discoveries();
    let properties: Vec<PropertyOutcome> = model
        .properties()
        .iter()
        .map(|p| {
            let found = discoveries.contains_key(p.name);
            let (kind, holds) = match p.expectation {
                Expectation::Always => ("always", !found),
                Expectation::Sometimes => ("sometimes", found),
                Expectation::Eventually => ("eventually", !found),
            };
            PropertyOutcome {
                name: p.name,
                kind,
                holds,
            }
        })
        .collect();
    let mut violations = Vec::new();
    for p in model.properties() {
        if p.expectation == Expectation::Sometimes {
            continue;
        }
        if let Some(path) = discoveries.get(p.name) {
            let steps: Vec<(M::State, Option<M::Action>)> = path.clone().into_vec();
            let initial = model.initial(&steps[0].0);
            let steps = steps.into_iter().filter_map(|(_, a)| a).collect();
            violations.push(Violation {
                property: p.name,
                trace: Trace {
                    params: model.params().clone(),
                    initial,
                    steps,
                },
            });
        }
    }
    let stopped = if !violations.is_empty() && budget.stop_at_violation {
        Stopped::Violation
    } else if checker.state_count() >= budget.max_states {
        Stopped::Budget
    } else {
        Stopped::Exhausted
    };
    Report {
        model: model.name(),
        params: model.params().clone(),
        stopped,
        initial_states,
        states: checker.state_count(),
        unique_states: checker.unique_state_count(),
        max_depth: checker.max_depth(),
        seconds,
        threads,
        properties,
        violations,
        figures: model.figures(),
    }
}

/// Run `steps` from `state` on `model`: each must be enabled where it is taken. The `always`
/// properties broken on the way, by name, each with the state it broke in.
pub fn replay_steps<M>(
    model: &M,
    mut state: M::State,
    steps: &[M::Action],
) -> Result<Vec<(String, M::State)>, String>
where
    M: Model,
    M::State: Clone,
    M::Action: PartialEq + Debug + Clone,
{
    let mut broken = Vec::new();
    let properties = model.properties();
    for (i, step) in steps.iter().enumerate() {
        let mut enabled = Vec::new();
        model.actions(&state, &mut enabled);
        if !enabled.contains(step) {
            return Err(format!("step {i} ({step:?}) is not enabled there"));
        }
        state = model
            .next_state(&state, step.clone())
            .ok_or_else(|| format!("step {i} ({step:?}) leads nowhere"))?;
        for property in &properties {
            if property.expectation == Expectation::Always && !(property.condition)(model, &state) {
                broken.push((property.name.to_string(), state.clone()));
            }
        }
    }
    Ok(broken)
}

/// The mutants of a model, by name (`--mutant NAME`).
pub trait Mutants: Copy + Sized + 'static {
    /// Which model's mutants, as an error names them.
    const MODEL: &'static str;
    const ALL: &'static [Self];
    fn name(self) -> &'static str;

    /// The mutant called `name`, or an error naming them all.
    fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .copied()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|m| m.name()).collect();
                format!("no {} mutant {name:?}: {}", Self::MODEL, names.join(", "))
            })
    }
}
