//! The incarnation's tasks: the source, the timers of crashes, checkpoint triggers and
//! zombies, and the delayed messages every other task sends the loop.

use steadfast_log::FileLog;

use super::{sleep, Message, Msg, Sim};
use crate::durable::{CHECKPOINT_DELAYS, CRASH_DELAYS, RETRY_DIVISOR, ZOMBIE_DELAYS};

impl Sim {
    /// Starts the source of every key at the operator's positions, and arms the crash
    /// and the checkpoint coordinator.
    pub(super) fn start_incarnation(&mut self) {
        for key in 0..self.keys.len() {
            let from = self
                .op
                .keys()
                .get(&self.keys[key])
                .map_or(0, |ks| ks.next_seq);
            let delays: Vec<(u64, u64)> = (from..u64::from(self.config.inputs))
                .map(|seq| (seq, self.delay()))
                .collect();
            if delays.is_empty() {
                continue;
            }
            let tx = self.tx.clone();
            let inc = self.inc;
            self.spawn(async move {
                for (seq, delay) in delays {
                    sleep(delay).await;
                    let _ = tx.send(Msg {
                        inc,
                        what: Message::Input { key, seq },
                    });
                }
            });
        }
        self.arm_crash();
        self.arm_trigger();
        if self.zombie.is_some() {
            let delay = self
                .rng
                .between(0, ZOMBIE_DELAYS * self.config.max_delay_ms);
            self.after(delay, Message::LandZombie);
        }
    }

    pub(super) fn arm_crash(&mut self) {
        if self.outcome.crashes < u32::from(self.config.crashes) {
            let delay = self.rng.between(1, CRASH_DELAYS * self.config.max_delay_ms);
            self.after(delay, Message::Crash);
        }
    }

    pub(super) fn arm_trigger(&mut self) {
        if self.next_checkpoint <= u64::from(self.config.checkpoints) {
            let delay = self
                .rng
                .between(1, CHECKPOINT_DELAYS * self.config.max_delay_ms);
            self.after(delay, Message::Trigger);
        }
    }

    /// The coordinator looks again soon: with eager scheduling a put is nearly always
    /// in flight, and the windows between them are short.
    pub(super) fn retry_trigger(&mut self) {
        let delay = self
            .rng
            .between(1, (self.config.max_delay_ms / RETRY_DIVISOR).max(1));
        self.after(delay, Message::Trigger);
    }

    pub(super) fn delay(&mut self) -> u64 {
        self.rng.between(0, self.config.max_delay_ms)
    }

    /// A task of the incarnation that sends `what` to the loop after `delay_ms`.
    pub(super) fn after(&mut self, delay_ms: u64, what: Message) {
        let tx = self.tx.clone();
        let inc = self.inc;
        self.spawn(async move {
            sleep(delay_ms).await;
            let _ = tx.send(Msg { inc, what });
        });
    }

    pub(super) fn spawn(&mut self, task: impl std::future::Future<Output = ()> + 'static) {
        if self.tasks.len() >= 64 {
            self.tasks.retain(|t| !t.is_finished());
        }
        self.tasks.push(tokio::task::spawn_local(task));
    }

    pub(super) fn log(&mut self) -> Result<&mut FileLog, String> {
        self.log
            .as_mut()
            .ok_or_else(|| "the log is not open (crashed)".to_string())
    }
}
