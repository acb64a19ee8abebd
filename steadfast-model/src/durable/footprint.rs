//! The durable model's footprint for partial-order reduction ([`crate::por`]): its
//! state's components, what each step reads and writes of them, which steps a crash
//! absorbs, and which component keeps a disabled step disabled.
//!
//! Most components are per key, so that two keys' steps touch different ones. The
//! store's cache and the log's contents are each split into the key's queue head and
//! the rest: a running action reads only its head's entries, and pruning after a
//! checkpoint only touches finished inputs, never a head (a pending checkpoint counts no
//! more inputs finished than the operator does). A step that moves the head changes
//! which entry is the head's, so it writes both parts. Offsets are components apart from
//! the log's contents because renumbering them (`compact-offsets`) touches every offset
//! of a partition and nothing else.
//!
//! Every declaration is checked at every reachable state by [`crate::por::audit`] in
//! `steadfast-model/tests/por_durable.rs`.

use super::{Action, Checkpoint, Durable, Phase, State, MAX_KEYS, MAX_PARTITIONS};
use crate::por::{hash_of as value, Cells, Footprint};

/// A per-key component, numbered within its key.
#[derive(Clone, Copy)]
enum KeyCell {
    /// Inputs delivered (`next_seq`).
    Seq,
    /// The queue head (`finished`, `next_action`).
    Head,
    /// The running action (`phase`, `call_index_behind`).
    Phase,
    /// The put in flight, its offset aside.
    Put,
    /// The offset of the put in flight.
    PutOffset,
    /// The cache entry of the head.
    CacheHead,
    /// The other cache entries of the key.
    CacheRest,
    /// Which of the key's state keys have an acknowledged offset.
    AckedSlots,
    /// The acknowledged offsets' values.
    AckedOffsets,
    /// The boundary map's entry.
    Boundary,
    /// The log's records of the key, without their offsets.
    Log,
    /// The offsets of the key's records.
    LogOffsets,
    /// Outputs committed.
    Committed,
}

const PER_KEY: usize = 13;
/// The views per key ([`Footprint::views`]).
const VIEWS_PER_KEY: usize = 4;
const PARTITION_BASE: usize = MAX_KEYS * PER_KEY;

/// A component shared by every key.
#[derive(Clone, Copy)]
enum Global {
    Failed = (PARTITION_BASE + MAX_PARTITIONS) as isize,
    /// `down` and `fenced_partitions`.
    Down,
    Scaled,
    /// Pending checkpoints (their markers aside) and the trigger count.
    Pending,
    /// The pending checkpoints' markers.
    PendingMarkers,
    /// The latest completed checkpoint, its marker aside.
    Completed,
    /// The latest completed checkpoint's marker.
    CompletedMarker,
    Crashes,
    FailedSends,
    /// The zombie send and its fence.
    Zombie,
}

const CELL_COUNT: usize = Global::Zombie as usize + 1;

fn key(k: u8, cell: KeyCell) -> Cells {
    Cells::one(k as usize * PER_KEY + cell as usize)
}

fn global(cell: Global) -> Cells {
    Cells::one(cell as usize)
}

fn partition(p: usize) -> Cells {
    Cells::one(PARTITION_BASE + p)
}

impl Durable {
    fn keys(&self) -> impl Iterator<Item = u8> {
        0..self.bounds.keys
    }

    /// `cell` of every key.
    fn every_key(&self, cell: KeyCell) -> Cells {
        self.keys().fold(Cells::NONE, |c, k| c | key(k, cell))
    }

    /// The keys whose records partition `p` holds.
    fn keys_of(&self, p: usize) -> impl Iterator<Item = u8> + '_ {
        self.keys().filter(move |&k| self.partition(k) == p)
    }

    /// Every offset of partition `p`: what renumbering it may change.
    fn offsets_of(&self, p: usize) -> Cells {
        self.keys_of(p).fold(
            partition(p) | global(Global::PendingMarkers) | global(Global::CompletedMarker),
            |c, k| {
                c | key(k, KeyCell::LogOffsets)
                    | key(k, KeyCell::AckedOffsets)
                    | key(k, KeyCell::PutOffset)
            },
        )
    }

    /// Every offset of every partition.
    fn all_offsets(&self) -> Cells {
        (0..self.bounds.partitions as usize).fold(Cells::NONE, |c, p| c | self.offsets_of(p))
    }

    /// What moving key `k`'s head writes: the head and which entries are the head's.
    fn head_moves(&self, k: u8) -> Cells {
        let mut c = key(k, KeyCell::Head) | key(k, KeyCell::CacheHead) | key(k, KeyCell::CacheRest);
        if self.design.keeps_key_map() {
            c = c | key(k, KeyCell::Boundary);
        }
        c
    }

    /// What every step outside a restore reads: whether the task is down or failing.
    fn running() -> Cells {
        global(Global::Down) | global(Global::Failed)
    }

    /// What "no action runs" reads where the settings make it a guard (the synchronous
    /// executor).
    fn quiet_guard(&self) -> Cells {
        if self.bounds.mid_action_checkpoints {
            Cells::NONE
        } else {
            self.every_key(KeyCell::Phase)
        }
    }

    /// What "a put may be sent" reads: every key's put, with sequential puts.
    fn send_guard(&self) -> Cells {
        if self.bounds.concurrent_puts {
            Cells::NONE
        } else {
            self.every_key(KeyCell::Put)
        }
    }

    /// What a key's put landing reads and writes (its partition's end, its head's
    /// records and offsets).
    fn landing(&self, k: u8) -> Cells {
        let p = self.partition(k);
        partition(p)
            | key(k, KeyCell::Log)
            | key(k, KeyCell::LogOffsets)
            | key(k, KeyCell::PutOffset)
    }

    /// What choosing between a durable call's reuse and its supplier call reads.
    fn at_call(&self, k: u8) -> Cells {
        Self::running()
            | key(k, KeyCell::Head)
            | key(k, KeyCell::Phase)
            | key(k, KeyCell::CacheHead)
    }

    /// What answering key `k`'s put writes: it lands if it had not, the store caches
    /// and tracks it, the action goes on (and may finish, moving the head).
    fn answer(&self, k: u8) -> Cells {
        self.landing(k)
            | self.offsets_of(self.partition(k))
            | key(k, KeyCell::Put)
            | key(k, KeyCell::Phase)
            | key(k, KeyCell::CacheHead)
            | key(k, KeyCell::AckedSlots)
            | key(k, KeyCell::AckedOffsets)
            | self.head_moves(k)
    }

    /// What a snapshot of keyed state and markers reads (both subtasks' parts).
    fn snapshot_reads(&self) -> Cells {
        let per_key = [
            KeyCell::Seq,
            KeyCell::Head,
            KeyCell::AckedSlots,
            KeyCell::AckedOffsets,
            KeyCell::Boundary,
            KeyCell::Log,
            KeyCell::Put,
            KeyCell::Committed,
        ];
        let mut c = per_key
            .into_iter()
            .fold(Cells::NONE, |c, cell| c | self.every_key(cell));
        c = c | self.all_offsets() | global(Global::Scaled) | global(Global::Crashes);
        c | self.quiet_guard() | Self::running() | global(Global::Pending)
    }

    /// What a crash writes: everything volatile, the log where a send lands, the
    /// offsets; the completed checkpoint, committed outputs, the failed sends and the
    /// scaling stay.
    fn crash_writes(&self) -> Cells {
        let volatile = [
            KeyCell::Seq,
            KeyCell::Head,
            KeyCell::Phase,
            KeyCell::Put,
            KeyCell::PutOffset,
            KeyCell::CacheHead,
            KeyCell::CacheRest,
            KeyCell::AckedSlots,
            KeyCell::AckedOffsets,
            KeyCell::Boundary,
            KeyCell::Log,
            KeyCell::LogOffsets,
        ];
        volatile
            .into_iter()
            .fold(self.all_offsets(), |c, cell| c | self.every_key(cell))
            | global(Global::Down)
            | global(Global::Failed)
            | global(Global::Pending)
            | global(Global::PendingMarkers)
            | global(Global::Crashes)
            | global(Global::Zombie)
    }

    /// What a restore writes: keyed state from the checkpoint, the store rebuilt, the
    /// outputs committed, the scaling, the fence, the offsets.
    fn restore_writes(&self) -> Cells {
        let rebuilt = [
            KeyCell::Seq,
            KeyCell::Head,
            KeyCell::CacheHead,
            KeyCell::CacheRest,
            KeyCell::AckedSlots,
            KeyCell::AckedOffsets,
            KeyCell::Committed,
        ];
        rebuilt
            .into_iter()
            .fold(self.all_offsets(), |c, cell| c | self.every_key(cell))
            | global(Global::Down)
            | global(Global::Scaled)
            | global(Global::Zombie)
    }

    /// The pending checkpoints, markers included.
    fn pending() -> Cells {
        global(Global::Pending) | global(Global::PendingMarkers)
    }

    /// The completed checkpoint, marker included.
    fn completed() -> Cells {
        global(Global::Completed) | global(Global::CompletedMarker)
    }

    /// Everything: crashes and restores read the whole state.
    fn everything() -> Cells {
        Cells::range(0, CELL_COUNT)
    }

    fn step_reads(&self, action: &Action) -> Cells {
        let run = Self::running();
        match *action {
            Action::DeliverInput(k) => run | key(k, KeyCell::Seq) | self.quiet_guard(),
            Action::StartAction(k) => {
                run | self.quiet_guard()
                    | key(k, KeyCell::Seq)
                    | key(k, KeyCell::Head)
                    | key(k, KeyCell::Phase)
                    | key(k, KeyCell::CacheHead)
                    | key(k, KeyCell::Log)
                    | key(k, KeyCell::Committed)
                    | global(Global::Completed)
            }
            // The guard that picks one of the two reads the head's cache entry; the
            // supplier's call reads the log for a repeat, the reuse the completed
            // checkpoint's marker.
            Action::CallSupplier(k) => self.at_call(k) | key(k, KeyCell::Log),
            Action::ReuseResult(k) => {
                self.at_call(k)
                    | global(Global::Completed)
                    | global(Global::CompletedMarker)
                    | global(Global::Scaled)
            }
            Action::SendPut(k) | Action::CompleteAction(k) => {
                run | self.send_guard()
                    | key(k, KeyCell::Head)
                    | key(k, KeyCell::Phase)
                    | key(k, KeyCell::CacheHead)
                    | key(k, KeyCell::Put)
            }
            Action::LandPut(k) | Action::AckPut(k) | Action::FailPut { key: k, .. } => {
                run | self.landing(k)
                    | key(k, KeyCell::Put)
                    | key(k, KeyCell::Phase)
                    | key(k, KeyCell::Head)
                    | key(k, KeyCell::Committed)
                    | global(Global::FailedSends)
                    | self.offsets_of(self.partition(k))
            }
            Action::TriggerCheckpoint
            | Action::SnapshotSubtask
            | Action::CompleteCheckpoint(_)
            | Action::CompleteCheckpointUnnotified(_)
            | Action::AbortCheckpoint(_) => self.snapshot_reads() | self.every_key(KeyCell::Put),
            Action::Crash { .. }
            | Action::LandZombie
            | Action::FencePartition(_)
            | Action::Restore
            | Action::RestoreScaledIn => Self::everything(),
        }
    }

    fn step_writes(&self, action: &Action) -> Cells {
        match *action {
            Action::DeliverInput(k) => key(k, KeyCell::Seq),
            Action::StartAction(k) => key(k, KeyCell::Phase) | self.head_moves(k),
            Action::ReuseResult(k) | Action::CallSupplier(k) => key(k, KeyCell::Phase),
            Action::SendPut(k) | Action::CompleteAction(k) => {
                key(k, KeyCell::Phase)
                    | key(k, KeyCell::Put)
                    | key(k, KeyCell::PutOffset)
                    | key(k, KeyCell::CacheHead)
            }
            Action::LandPut(k) => self.landing(k) | self.offsets_of(self.partition(k)),
            Action::AckPut(k) => self.answer(k),
            Action::FailPut { key: k, .. } => {
                self.answer(k) | global(Global::FailedSends) | global(Global::Failed)
            }
            Action::TriggerCheckpoint | Action::SnapshotSubtask => {
                let commits = if self.design.commits_on_snapshot() {
                    self.every_key(KeyCell::Committed)
                } else {
                    Cells::NONE
                };
                Self::pending() | commits
            }
            Action::CompleteCheckpoint(_) => {
                Self::pending()
                    | Self::completed()
                    | self.every_key(KeyCell::CacheRest)
                    | self.every_key(KeyCell::AckedSlots)
                    | self.every_key(KeyCell::AckedOffsets)
                    | self.every_key(KeyCell::Committed)
                    | self.all_offsets()
            }
            Action::CompleteCheckpointUnnotified(_) => Self::pending() | Self::completed(),
            Action::AbortCheckpoint(_) => Self::pending(),
            Action::Crash { .. } => self.crash_writes(),
            Action::Restore | Action::RestoreScaledIn => self.restore_writes(),
            Action::LandZombie => {
                self.all_offsets() | self.every_key(KeyCell::Log) | global(Global::Zombie)
            }
            Action::FencePartition(p) => {
                self.offsets_of(p as usize) | global(Global::Down) | global(Global::Zombie)
            }
        }
    }

    /// The components of every conjunct of `action`'s guard that is false at `s`. An
    /// empty set of components: the settings never enable the step.
    fn false_conjuncts(&self, s: &State, action: &Action, out: &mut Vec<Cells>) {
        let b = self.bounds;
        let mut unless = |holds: bool, cells: Cells| {
            if !holds {
                out.push(cells)
            }
        };
        let restoring = matches!(
            action,
            Action::Restore
                | Action::RestoreScaledIn
                | Action::FencePartition(_)
                | Action::LandZombie
        );
        let failing = matches!(action, Action::Crash { landed: false } | Action::LandPut(_));
        unless(!s.down || restoring, global(Global::Down));
        unless(!s.failed || failing, global(Global::Failed));
        let quiet = b.mid_action_checkpoints || !self.any_running(s);
        let ku = |k: u8| k as usize;
        match *action {
            Action::DeliverInput(k) => {
                unless(s.next_seq[ku(k)] < b.inputs, key(k, KeyCell::Seq));
                unless(quiet, self.quiet_guard());
            }
            Action::StartAction(k) => {
                unless(s.phase[ku(k)] == Phase::Idle, key(k, KeyCell::Phase));
                unless(
                    s.finished[ku(k)] < s.next_seq[ku(k)],
                    key(k, KeyCell::Seq) | key(k, KeyCell::Head),
                );
                unless(quiet, self.quiet_guard());
            }
            Action::ReuseResult(k) | Action::CallSupplier(k) => {
                let at = phase_allows(action, s.phase[ku(k)], b.calls);
                unless(at, key(k, KeyCell::Phase));
                // At a call, the head's cache entry picks the reuse or the supplier call.
                unless(!at, self.at_call(k));
            }
            Action::SendPut(k) | Action::CompleteAction(k) => {
                unless(
                    phase_allows(action, s.phase[ku(k)], b.calls),
                    key(k, KeyCell::Phase),
                );
                unless(b.concurrent_puts || !s.any_put(), self.send_guard());
            }
            Action::LandPut(k) | Action::AckPut(k) | Action::FailPut { key: k, .. } => {
                self.put_conjuncts(s, action, k, &mut unless)
            }
            Action::TriggerCheckpoint => {
                let room = s.pending_count() < b.concurrent_checkpoints as usize
                    && s.checkpoints < b.checkpoints;
                unless(room, global(Global::Pending));
                unless(
                    !s.any_put() || !b.synchronous_puts,
                    self.every_key(KeyCell::Put),
                );
                unless(quiet, self.quiet_guard());
            }
            Action::SnapshotSubtask | Action::CompleteCheckpoint(_) => {
                unless(s.pending_count() > 0, global(Global::Pending));
                unless(quiet, self.quiet_guard());
            }
            Action::CompleteCheckpointUnnotified(_) => {
                unless(b.lost_completions, Cells::NONE);
                unless(s.pending_count() > 0, global(Global::Pending));
            }
            Action::AbortCheckpoint(_) => {
                unless(b.checkpoint_aborts, Cells::NONE);
                unless(s.pending_count() > 0, global(Global::Pending));
                unless(quiet, self.quiet_guard());
            }
            Action::Crash { landed } => {
                unless(s.crashes < b.crashes, global(Global::Crashes));
                unless(
                    s.completed.is_some() || b.restart_without_checkpoint,
                    global(Global::Completed),
                );
                unless(!landed || !b.concurrent_puts, Cells::NONE);
            }
            Action::LandZombie => {
                unless(s.zombie.is_some(), global(Global::Zombie));
                unless(s.down || !b.fenced_producer, global(Global::Down));
            }
            Action::FencePartition(p) => {
                unless(b.epoch_fencing, Cells::NONE);
                unless(s.down && s.fenced_partitions == p, global(Global::Down));
            }
            Action::Restore => unless(s.down, global(Global::Down)),
            Action::RestoreScaledIn => {
                unless(b.rescale, Cells::NONE);
                unless(!s.scaled_in, global(Global::Scaled));
                unless(s.down, global(Global::Down));
            }
        }
    }

    /// The false conjuncts of a step of key `k`'s put: there must be one, landed or not
    /// as the step needs, and sends may have to be left to fail.
    fn put_conjuncts(
        &self,
        s: &State,
        action: &Action,
        k: u8,
        unless: &mut impl FnMut(bool, Cells),
    ) {
        let b = self.bounds;
        if let Action::FailPut { .. } = action {
            unless(
                s.failed_sends < b.send_failures,
                global(Global::FailedSends),
            );
        }
        let Some(put) = s.puts[k as usize] else {
            return unless(false, key(k, KeyCell::Put));
        };
        let landed = put.offset.is_some();
        let lands_apart = !b.synchronous_puts || b.concurrent_puts;
        let offset = key(k, KeyCell::PutOffset);
        match *action {
            Action::LandPut(_) => {
                unless(lands_apart, Cells::NONE);
                unless(!landed, offset);
            }
            Action::AckPut(_) => unless(landed || !lands_apart, offset),
            Action::FailPut { landed: after, .. } => {
                if after {
                    unless(b.fail_after_landing, Cells::NONE);
                    unless(landed || !lands_apart, offset);
                } else {
                    unless(!landed, offset);
                }
            }
            _ => {}
        }
    }
}

/// Whether key `k`'s phase is one where `action` (a step of that key's action) may run.
fn phase_allows(action: &Action, phase: Phase, calls: u8) -> bool {
    match (action, phase) {
        (Action::StartAction(_), Phase::Idle) => true,
        (Action::ReuseResult(_) | Action::CallSupplier(_), Phase::AtCall(i)) => i < calls,
        (Action::CompleteAction(_), Phase::AtCall(i)) => i == calls,
        (Action::SendPut(_), Phase::HaveResult(_)) => true,
        _ => false,
    }
}

impl Footprint for Durable {
    fn alphabet(&self) -> Vec<Action> {
        let b = self.bounds;
        let mut steps = Vec::new();
        for k in self.keys() {
            steps.extend([
                Action::DeliverInput(k),
                Action::StartAction(k),
                Action::ReuseResult(k),
                Action::CallSupplier(k),
                Action::SendPut(k),
                Action::CompleteAction(k),
                Action::LandPut(k),
                Action::AckPut(k),
                Action::FailPut {
                    key: k,
                    landed: false,
                },
                Action::FailPut {
                    key: k,
                    landed: true,
                },
            ]);
        }
        steps.extend([Action::TriggerCheckpoint, Action::SnapshotSubtask]);
        for id in 1..=b.checkpoints {
            steps.extend([
                Action::CompleteCheckpoint(id),
                Action::CompleteCheckpointUnnotified(id),
                Action::AbortCheckpoint(id),
            ]);
        }
        steps.extend([
            Action::Crash { landed: false },
            Action::Crash { landed: true },
            Action::LandZombie,
            Action::Restore,
            Action::RestoreScaledIn,
        ]);
        steps.extend((0..b.partitions).map(Action::FencePartition));
        steps
    }

    fn reads(&self, action: &Action) -> Cells {
        self.step_reads(action)
    }

    fn writes(&self, action: &Action) -> Cells {
        self.step_writes(action)
    }

    fn disabling(&self, s: &State, action: &Action, conjuncts: &mut Vec<Cells>) {
        self.false_conjuncts(s, action, conjuncts)
    }

    fn observed(&self) -> Cells {
        self.views().into_iter().fold(Cells::NONE, |c, v| c | v)
    }

    /// Per key, the state conditions of the safety properties (same output, cache
    /// holds log, bounded tracking, marker is safe); then whether a crash came, which
    /// the reuse after a restore looks at.
    fn views(&self) -> Vec<Cells> {
        let mut views = Vec::new();
        for k in self.keys() {
            let cache = key(k, KeyCell::CacheHead) | key(k, KeyCell::CacheRest);
            let log = key(k, KeyCell::Log);
            views.extend([
                key(k, KeyCell::Committed) | global(Global::Completed),
                cache | log | key(k, KeyCell::Put),
                cache
                    | key(k, KeyCell::Boundary)
                    | key(k, KeyCell::AckedSlots)
                    | key(k, KeyCell::Seq)
                    | key(k, KeyCell::Head),
                log | key(k, KeyCell::LogOffsets) | Self::completed() | global(Global::Scaled),
            ]);
        }
        views.push(global(Global::Crashes));
        views
    }

    fn view(&self, s: &State, view: usize) -> u64 {
        let (k, condition) = (view / VIEWS_PER_KEY, view % VIEWS_PER_KEY);
        if k >= self.bounds.keys as usize {
            return u64::from(s.crashes > 0);
        }
        let holds = match condition {
            0 => self.output_agrees(s, k),
            1 => self.cache_holds_log(s, k),
            2 => self.tracking_bounded(s, k),
            _ => self.marker_safe(s, k),
        };
        u64::from(holds)
    }

    /// A crash forgets what the operator did in memory without a trace elsewhere: a
    /// delivered input, a call's result (still running either way), a pending
    /// checkpoint dropped by an abort.
    fn absorbs(&self, later: &Action, earlier: &Action) -> bool {
        matches!(later, Action::Crash { .. })
            && matches!(
                earlier,
                Action::DeliverInput(_)
                    | Action::ReuseResult(_)
                    | Action::CallSupplier(_)
                    | Action::AbortCheckpoint(_)
            )
    }

    fn quiet(&self, state: &State) -> bool {
        state.events == super::Events::NONE
    }

    fn core(&self, state: &State) -> State {
        let mut core = state.clone();
        core.events = super::Events::NONE;
        core
    }

    fn cell_count(&self) -> usize {
        CELL_COUNT
    }

    fn cell_values(&self, s: &State) -> Vec<u64> {
        let mut values = vec![0; CELL_COUNT];
        for k in self.keys() {
            let ku = k as usize;
            let head = s.head(ku);
            let slots = self.slot_range().filter(|sk| sk.key == k);
            let (mut cache_rest, mut log, mut offsets, mut acked) =
                (vec![], vec![], vec![], vec![]);
            for sk in slots {
                let record = s.log.get(sk.slot());
                offsets.push(record.map(|r| r.offset));
                log.push(record.map(|r| (r.latest, r.landed)));
                acked.push(s.acked_offset.get(sk.slot()));
                if sk != head {
                    cache_rest.push(s.cached(sk));
                }
            }
            let put = s.puts[ku];
            let at = |cell: KeyCell| ku * PER_KEY + cell as usize;
            values[at(KeyCell::Seq)] = value(s.next_seq[ku]);
            values[at(KeyCell::Head)] = value((s.finished[ku], s.next_action[ku]));
            values[at(KeyCell::Phase)] = value((s.phase[ku], s.call_index_behind[ku]));
            values[at(KeyCell::Put)] = value(put.map(|p| p.record));
            values[at(KeyCell::PutOffset)] = value(put.map(|p| p.offset));
            values[at(KeyCell::CacheHead)] = value(s.cached(head));
            values[at(KeyCell::CacheRest)] = value(cache_rest);
            values[at(KeyCell::AckedSlots)] =
                value(acked.iter().map(Option::is_some).collect::<Vec<_>>());
            values[at(KeyCell::AckedOffsets)] = value(acked);
            values[at(KeyCell::Boundary)] = value(s.key_boundary[ku]);
            values[at(KeyCell::Log)] = value(log);
            values[at(KeyCell::LogOffsets)] = value(offsets);
            values[at(KeyCell::Committed)] = value(s.committed_outputs[ku]);
        }
        for p in 0..self.bounds.partitions as usize {
            values[PARTITION_BASE + p] = value(s.log_len[p]);
        }
        values[Global::Failed as usize] = value(s.failed);
        values[Global::Down as usize] = value((s.down, s.fenced_partitions));
        values[Global::Scaled as usize] = value(s.scaled_in);
        let markers = |c: Checkpoint| c.marker;
        let unmarked = |c: Checkpoint| Checkpoint {
            marker: [0; MAX_PARTITIONS],
            ..c
        };
        values[Global::Pending as usize] =
            value((s.pending.map(|c| c.map(unmarked)), s.checkpoints));
        values[Global::PendingMarkers as usize] = value(s.pending.map(|c| c.map(markers)));
        values[Global::Completed as usize] = value(s.completed.map(unmarked));
        values[Global::CompletedMarker as usize] = value(s.completed.map(markers));
        values[Global::Crashes as usize] = value(s.crashes);
        values[Global::FailedSends as usize] = value(s.failed_sends);
        values[Global::Zombie as usize] = value((s.zombie, s.zombie_fenced));
        values
    }
}

const _: () = assert!(CELL_COUNT <= Cells::CAPACITY);
