//! Refusals of a restore's inputs that the model never produces, probed at every restore
//! from a checkpoint: checkpoint parts that do not make one checkpoint, log records that
//! are damaged or out of place, log ends that do not fit the marker, and answers for puts
//! the restored operator never sent. Each must be refused with its typed error naming the
//! problem, and leave what refused it as it was (compared by its `Debug` text, which
//! shows every field of a restore and the operator's keyed state, puts and store); a
//! finding is reported in the view's problems.

use super::*;

use steadfast::durable::{MergeError, Restoring};

/// A record made from one the replay reads by breaking one rule of the record format.
struct Damage {
    what: &'static str,
    /// Words the decode error's reason must hold.
    named: String,
    record: LogRecord,
}

/// The damages of `record`, one per check of the decoder a damage can reach.
fn damages_of(record: &LogRecord) -> Vec<Damage> {
    let mut out = Vec::new();
    let mut with = |what, named: String, f: &dyn Fn(&mut LogRecord)| {
        let mut bad = record.clone();
        f(&mut bad);
        out.push(Damage {
            what,
            named,
            record: bad,
        });
    };
    with(
        "a key of another format",
        "key: unknown record format 255".into(),
        &|r| r.key[0] = 0xff,
    );
    with(
        "a byte after the key's end",
        "key: 1 bytes after the end".into(),
        &|r| r.key.push(0),
    );
    // A fence is its format, kind and epoch: nothing else to damage but the epoch.
    if matches!(decode_entry(record), Ok(Entry::Fence { .. })) {
        with(
            "a fence's epoch cut short",
            "value: truncated".into(),
            &|r| {
                r.value.pop();
            },
        );
        return out;
    }
    // The input key's first byte follows the format and kind bytes and the key's length.
    with(
        "an input key not UTF-8",
        "key: input key is not UTF-8".into(),
        &|r| r.key[6] = 0xff,
    );
    with("a value cut short", "value: truncated".into(), &|r| {
        r.value.pop();
    });
    // The flags follow the format byte and the epoch.
    with("unknown flags", "value: unknown flags".into(), &|r| {
        r.value[9] = 0xff
    });
    // The first call result's outcome tag follows the format byte, the epoch, the flags,
    // the count, the function id (length and bytes) and the argument digest.
    let count = u32::from_le_bytes(record.value[10..14].try_into().expect("4 bytes"));
    if count > 0 {
        let len = u32::from_le_bytes(record.value[14..18].try_into().expect("4 bytes")) as usize;
        let tag = 18 + len + 8;
        with(
            "an unknown outcome tag",
            "value: unknown outcome tag 7".into(),
            &|r| r.value[tag] = 7,
        );
        // A value's JSON text follows its tag and length.
        if record.value[tag] == 0 {
            with("a call value not JSON", "value: call value:".into(), &|r| {
                r.value[tag + 5] = b'}'
            });
        }
    }
    out
}

impl<V: Variant> Runtime<V> {
    /// Checkpoint parts that do not make one checkpoint are refused by name: a part of
    /// another checkpoint, a key held by two parts, a marker over another number of
    /// partitions.
    pub(super) fn refuses_bad_parts(&mut self, parts: &[Arc<Checkpoint>]) {
        let Some(first) = parts.first() else { return };
        let n = parts.len();
        let mut with_extra = |extra: Checkpoint, want: MergeError| {
            let mut all: Vec<&Checkpoint> = parts.iter().map(|p| &**p).collect();
            all.push(&extra);
            match Checkpoint::merge(&all) {
                Err(e) if e == want => {}
                other => self.reports.push(format!(
                    "merging checkpoint parts gives {other:?}, not {want:?}"
                )),
            }
        };
        let mut later = (**first).clone();
        later.id += 1;
        with_extra(
            later,
            MergeError::CheckpointId {
                index: n,
                expected: first.id,
                found: first.id + 1,
            },
        );
        if let Some(key) = first.keys.keys().next() {
            with_extra((**first).clone(), MergeError::KeyInTwoParts(key.clone()));
        }
        let mut wider = (**first).clone();
        wider.keys.clear();
        wider.marker.offsets.push(0);
        with_extra(
            wider,
            MergeError::PartitionCount {
                index: n,
                expected: first.marker.offsets.len(),
                found: first.marker.offsets.len() + 1,
            },
        );
    }

    /// A restore of `cp` (owning every key) refuses, at the first record it replays,
    /// each damage of that record and the record out of place; it refuses log ends that
    /// do not fit (another partition count among them); the restored operator refuses
    /// events it cannot take. Each refusal leaves the restore or the operator as it was.
    pub(super) fn refuses_bad_replays(&mut self, cp: &Checkpoint, epoch: Epoch) {
        let partitions = cp.marker.offsets.len();
        let mut restoring = match Operator::restore(self.names.defs(), cp, epoch) {
            Ok(r) => r,
            Err(e) => {
                self.reports.push(format!("the checkpoint is refused: {e}"));
                return;
            }
        };
        let marker = restoring.marker().to_vec();
        let mut probed = false;
        for (p, partition) in self.log.iter().enumerate() {
            for record in partition.iter().skip(marker[p] as usize) {
                if !probed {
                    probed = true;
                    let problems = Self::refusals_at(&mut restoring, cp, record, &marker, epoch);
                    self.reports.extend(problems);
                }
                if let Err(e) = restoring.feed(record) {
                    self.reports
                        .push(format!("the replay refuses an intact record: {e}"));
                    return;
                }
            }
        }
        let ends = self.ends();
        let mut bad_ends = vec![(
            "one end too many",
            [ends.clone(), vec![0]].concat(),
            format!(
                "marker has {partitions} partitions, the log has {}",
                partitions + 1
            ),
        )];
        if let Some(p) = marker.iter().position(|&m| m > 0) {
            let mut short = ends.clone();
            short[p] = marker[p] - 1;
            bad_ends.push((
                "an end before the marker",
                short,
                format!(
                    "partition {p}: marker offset {} is past the log's end offset {}",
                    marker[p],
                    marker[p] - 1
                ),
            ));
        }
        let mut longer = ends.clone();
        longer[0] += 1;
        bad_ends.push((
            "an end past the records read",
            longer,
            format!(
                "partition 0: read up to offset {}, the log ends at {}",
                ends[0],
                ends[0] + 1
            ),
        ));
        for (what, bad, named) in bad_ends {
            match restoring.clone().finish(&bad) {
                Err(OperatorError::Store(StoreError::InvalidMarker(m) | StoreError::Replay(m)))
                    if m == named => {}
                other => self.reports.push(format!(
                    "finishing a restore with {what} gives {:?}, not `{named}`",
                    other.map(|_| ())
                )),
            }
        }
        match restoring.finish(&ends) {
            Ok((op, _)) => {
                let problems = Self::refuses_unsent_answers(op);
                self.reports.extend(problems);
            }
            Err(e) => self
                .reports
                .push(format!("the restore does not finish: {e}")),
        }
    }

    /// At `record`, the next the restore reads: every damage of it is refused as
    /// undecodable at its place, and the record out of place as a replay error; the
    /// restore is unchanged by each.
    fn refusals_at(
        restoring: &mut Restoring,
        cp: &Checkpoint,
        record: &LogRecord,
        marker: &[Offset],
        epoch: Epoch,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let before = restoring.clone();
        let (p, offset) = (record.partition, record.offset);
        let mut refused = |what: &str, bad: &LogRecord, ok: &dyn Fn(&StoreError) -> bool| {
            match restoring.feed(bad) {
                Err(OperatorError::Store(e)) if ok(&e) => {}
                other => problems.push(format!("feeding {what} gives {other:?}")),
            }
            if *restoring != before {
                problems.push(format!("feeding {what} changed the restore"));
            }
        };
        for d in damages_of(record) {
            let named = d.named.as_str();
            refused(d.what, &d.record, &|e| {
                matches!(e, StoreError::Decode { partition, offset: o, reason }
                    if *partition == p && *o == offset && reason.contains(named))
            });
        }
        // A record of a later incarnation than the restoring one: its epoch follows the
        // value's format byte, in fences and states alike.
        let mut future = record.clone();
        future.value[1..9].copy_from_slice(&(epoch + 1).to_le_bytes());
        refused("a record of a later epoch", &future, &|e| {
            matches!(e, StoreError::FutureEpoch { partition, offset: o, epoch: got, restoring }
                if *partition == p && *o == offset && *got == epoch + 1 && *restoring == epoch)
        });
        let replay = |words: String| move |e: &StoreError| matches!(e, StoreError::Replay(m) if m.contains(&words));
        let mut later = record.clone();
        later.offset += 1;
        refused(
            "a record after a gap",
            &later,
            &replay(format!("where {offset} was expected")),
        );
        let mut elsewhere = record.clone();
        elsewhere.partition = marker.len() as u32;
        refused(
            "a record of a partition the log lacks",
            &elsewhere,
            &replay(format!("the log has {}", marker.len())),
        );
        // In another partition not read yet, at the offset it expects: a record of an
        // unfinished input names the partition its key belongs to.
        let Ok(Some((sk, _))) = decode_record(record) else {
            return problems;
        };
        let finished = cp
            .keys
            .get(&sk.key)
            .and_then(|ks| ks.last_completed)
            .is_some_and(|done| sk.seq <= done);
        if let Some(q) = (p as usize + 1..marker.len()).next().filter(|_| !finished) {
            let mut moved = record.clone();
            moved.partition = q as u32;
            moved.offset = marker[q];
            refused(
                "a record in its key's wrong partition",
                &moved,
                &replay(format!("belongs to partition {p}")),
            );
        }
        problems
    }

    /// The restored operator `op` refuses, for each of its keys, an acknowledgement and a
    /// failure of a put it never sent, and an input past the bound of pending inputs
    /// (lowered to none for the probe); it stays as it was.
    fn refuses_unsent_answers(mut op: Operator) -> Vec<String> {
        let mut problems = Vec::new();
        let before = op.clone();
        let mut keys: Vec<String> = op.keys().keys().cloned().collect();
        keys.sort();
        for key in keys {
            let put = PutId(u64::MAX);
            let answers = [
                Event::PutAcked {
                    key: key.clone(),
                    put,
                    offset: 0,
                },
                Event::PutFailed {
                    key: key.clone(),
                    put,
                    error: LogError::SendFailed("no such put".into()),
                },
            ];
            for answer in answers {
                match op.handle(answer.clone()) {
                    Err(OperatorError::UnexpectedPut { key: k, put: p })
                        if k == key && p == put => {}
                    other => problems.push(format!("{answer:?} gives {other:?}")),
                }
            }
        }
        // A key whose pending inputs are at their bound refuses the next input.
        let full = Limits {
            pending_inputs_per_key: 0,
            ..op.limits()
        };
        let limits = op.limits();
        op.set_limits(full);
        let mut keys: Vec<String> = op.keys().keys().cloned().collect();
        keys.sort();
        for key in keys {
            let input = Event::Input {
                key: key.clone(),
                value: Datum::Null,
            };
            match op.handle(input) {
                Err(OperatorError::Full {
                    key: k,
                    what: "pending inputs",
                    limit: 0,
                }) if k == key => {}
                other => problems.push(format!("an input over the bound gives {other:?}")),
            }
        }
        op.set_limits(limits);
        if op != before {
            problems.push("events refused changed the operator".into());
        }
        problems
    }
}

/// A checkpoint no operator could have written, made from a real one by breaking one
/// rule of its keyed state.
pub(super) struct Corruption {
    /// What it breaks.
    pub(super) what: String,
    /// Words the refusal's reason must hold: it names the problem.
    pub(super) named: &'static str,
    pub(super) checkpoint: Checkpoint,
}

/// The corruptions of `cp`, one per rule a checkpoint's keyed state obeys.
pub(super) fn corruptions_of(cp: &Checkpoint, actions: &[String]) -> Vec<Corruption> {
    let mut out = Vec::new();
    let mut no_partition = cp.clone();
    no_partition.marker.offsets.clear();
    out.push(Corruption {
        what: "a marker naming no partition".to_string(),
        named: "names no partition",
        checkpoint: no_partition,
    });
    for (key, ks) in &cp.keys {
        let mut with = |what: &str, named, f: &dyn Fn(&mut KeyState)| {
            let mut bad = cp.clone();
            f(bad.keys.get_mut(key).expect("the key is in it"));
            out.push(Corruption {
                what: format!("{key}: {what}"),
                named,
                checkpoint: bad,
            });
        };
        let current = ks.last_completed.map_or(0, |d| d + 1);
        with(
            "the next sequence number at the counter's end",
            "counter's end",
            &|ks| ks.next_seq = u64::MAX,
        );
        with(
            "the last completed input at the next sequence number",
            "is not below the next",
            &|ks| ks.last_completed = Some(ks.next_seq),
        );
        with(
            "the next sequence number past the inputs accounted for",
            "are accounted for",
            &|ks| ks.next_seq += 1,
        );
        let first = actions.first().cloned().unwrap_or_default();
        with(
            "more actions queued than configured",
            "actions queued",
            &|ks| {
                while ks.queue.len() <= actions.len() {
                    ks.queue.push_back(QueuedAction {
                        seq: current,
                        action: first.clone(),
                        input: Datum::Null,
                    });
                }
            },
        );
        with(
            "a pending input out of sequence",
            "pending input has sequence",
            &|ks| {
                let last = ks.pending_inputs.back().map(|p| p.seq);
                let expected = last.map_or(current + u64::from(!ks.queue.is_empty()), |l| l + 1);
                ks.pending_inputs.push_back(PendingInput {
                    seq: expected + 1,
                    input: Datum::Null,
                });
                ks.next_seq = expected + 2;
            },
        );
        if ks.queue.is_empty() {
            continue;
        }
        with(
            "a queued action of another input",
            "while the current input is",
            &|ks| ks.queue[0].seq += 1,
        );
        with(
            "a queued action that is not configured",
            "unknown action",
            &|ks| ks.queue[0].action = "unconfigured".into(),
        );
        if actions.len() > 1 {
            with(
                "a queued action out of the configured order",
                "out of the configured order",
                &|ks| {
                    let at = actions.len() - ks.queue.len();
                    ks.queue[0].action = actions[(at + 1) % actions.len()].clone();
                },
            );
        }
    }
    out
}

impl<V: Variant> Runtime<V> {
    /// Every corruption of `cp` ([`corruptions_of`]) is refused by a restore, as are
    /// action definitions naming one action twice, and a key restored at the sequence
    /// counter's last usable number refuses its next input; anything else is reported.
    pub(super) fn refuses_corruptions_of(&mut self, cp: &Arc<Checkpoint>, epoch: Epoch) {
        for c in corruptions_of(cp, &self.names.actions) {
            let what = &c.what;
            match Operator::restore(self.names.defs(), &c.checkpoint, epoch) {
                Err(OperatorError::InvalidCheckpoint(why)) if why.contains(c.named) => {}
                Err(e) => self.reports.push(format!(
                    "restoring a checkpoint with {what} fails with {e:?}, not as an invalid \
                     checkpoint whose reason says `{}`",
                    c.named
                )),
                Ok(_) => self
                    .reports
                    .push(format!("a restore takes a checkpoint with {what}")),
            }
        }
        // A key at the counter's last usable sequence number restores, and its next
        // input is refused rather than wrapping the counter.
        let mut last = (**cp).clone();
        let key = self.names.keys[0].clone();
        last.keys.insert(
            key.clone(),
            KeyState {
                next_seq: u64::MAX - 1,
                last_completed: Some(u64::MAX - 2),
                ..KeyState::default()
            },
        );
        last.marker.offsets = self.ends();
        let input = Event::Input {
            key: key.clone(),
            value: Datum::Null,
        };
        let restored = Operator::restore(self.names.defs(), &last, epoch);
        match restored.and_then(|r| r.finish(&self.ends())) {
            Ok((mut op, _)) => match op.handle(input) {
                Err(OperatorError::SequenceExhausted(k)) if k == key => {}
                other => self.reports.push(format!(
                    "an input at the sequence counter's end gives {other:?}, not SequenceExhausted"
                )),
            },
            Err(e) => self.reports.push(format!(
                "a checkpoint at the sequence counter's last number is refused: {e}"
            )),
        }
        let mut twice = self.names.defs();
        twice.extend(self.names.defs().into_iter().take(1));
        if !matches!(
            Operator::restore(twice, cp, epoch),
            Err(OperatorError::DuplicateAction(_))
        ) {
            self.reports
                .push("a restore takes action definitions naming one action twice".into());
        }
    }
}
