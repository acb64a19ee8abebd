//! Running the supplier for requested calls and delivering their outcomes to the
//! operator, with the count of runs whose result never reached the log.

use steadfast::durable::decode_record;
use steadfast::durable::Offset;
use steadfast::durable::{
    partition_for, ActionState, CallOutcome, CallRef, Event, OperatorError, StateKey,
};

use super::{Driver, DriverError, RequestedCall};
use crate::log::Log;

/// Whether the state `state` of `key` saves `call`'s result (`sk` is the call's state
/// key): it holds the call's index, or completes the action.
fn saves(key: &StateKey, state: &ActionState, sk: &StateKey, call: &CallRef) -> bool {
    key == sk && (state.completed || state.call_results.len() > call.index as usize)
}

impl<L: Log> Driver<L> {
    /// Run the supplier of requested call `index` without delivering its outcome. A
    /// failed operator refuses every outcome, so its requests are not run: the call
    /// would be an external effect whose result can never be saved.
    pub fn run_supplier(&mut self, index: usize) -> Result<(), DriverError> {
        if index >= self.requested.len() {
            return Err(DriverError::NoSuchCall(index));
        }
        if let Some(reason) = self.op.as_ref().and_then(|op| op.failure()) {
            return Err(OperatorError::Failed(Box::new(reason.clone())).into());
        }
        let req = self.requested.remove(index);
        let outcome = (self.supplier)(&req.call, &req.function, &req.args);
        *self.supplier_calls.entry(req.call.clone()).or_default() += 1;
        // The model's `CallSupplier`: the supplier returned (as the simulated task logs it).
        tracing::info!(
            component = "durable.supplier",
            event = "call",
            key = %req.call.key,
            seq = req.call.seq,
            action = %req.call.action,
            index = req.call.index,
        );
        self.returned.push((req, outcome));
        Ok(())
    }

    /// Deliver returned call `index` to the operator, which saves it with a put; the
    /// put is answered before this returns.
    pub fn deliver(&mut self, index: usize) -> Result<(), DriverError> {
        // A crash drops every returned call: with none, no operator is needed.
        if index >= self.returned.len() {
            return Err(DriverError::NoSuchCall(index));
        }
        let (req, outcome) = self.returned.remove(index);
        self.deliver_calls(vec![(req, outcome)])
    }

    /// Deliver every returned call at once: their puts are sent together and one flush
    /// makes them durable (group commit).
    pub fn deliver_all(&mut self) -> Result<(), DriverError> {
        if self.op.is_none() {
            return Err(DriverError::NotRunning);
        }
        let returned = std::mem::take(&mut self.returned);
        self.deliver_calls(returned)
    }

    fn deliver_calls(
        &mut self,
        calls: Vec<(RequestedCall, CallOutcome)>,
    ) -> Result<(), DriverError> {
        let partitions = self
            .log
            .as_ref()
            .ok_or(DriverError::NotRunning)?
            .partition_count();
        let ends_before = self.ends()?;
        let mut effects = Vec::new();
        let mut delivered = Vec::with_capacity(calls.len());
        let mut result = Ok(());
        for (req, outcome) in calls {
            let event = Event::CallReturned {
                call: req.call.clone(),
                outcome,
            };
            delivered.push(req.call);
            match self
                .op_mut()
                .and_then(|op| Ok(op.handle_into(event, &mut effects)?))
            {
                Ok(()) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = self.execute(effects);
        } else {
            self.acked.clear();
        }
        // A call saved by an acknowledged put landed; for the others the log is read
        // from where it ended before the delivery (a failed put may still have landed).
        let mut acked = Vec::with_capacity(self.acked.len());
        for record in &self.acked {
            acked.extend(decode_record(record)?);
        }
        for call in delivered {
            let sk = call.state_key();
            if acked.iter().any(|(k, state)| saves(k, state, &sk, &call)) {
                continue;
            }
            let partition = partition_for(&call.key, partitions);
            let from = ends_before.get(partition as usize).copied().unwrap_or(0);
            if !self.landed_since(partition, from, &call)? {
                *self.unlanded.entry(call).or_default() += 1;
            }
        }
        result
    }

    pub(super) fn ends(&mut self) -> Result<Vec<Offset>, DriverError> {
        let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
        Ok(log.end_offsets()?)
    }

    /// Whether a record saving `call`'s result landed at or after `from`.
    fn landed_since(
        &mut self,
        partition: u32,
        from: u64,
        call: &CallRef,
    ) -> Result<bool, DriverError> {
        let log = self.log.as_mut().ok_or(DriverError::NotRunning)?;
        let sk = call.state_key();
        let mut next = from;
        loop {
            let batch = log.read(partition, next, 256)?;
            if batch.is_empty() {
                return Ok(false);
            }
            for record in &batch {
                next = record.offset + 1;
                // Fences save nothing.
                let Some((k, state)) = decode_record(record)? else {
                    continue;
                };
                if saves(&k, &state, &sk, call) {
                    return Ok(true);
                }
            }
        }
    }

    /// Run and deliver requested call `index`.
    pub fn call(&mut self, index: usize) -> Result<(), DriverError> {
        self.run_supplier(index)?;
        self.deliver(self.returned.len() - 1)
    }

    /// Run and deliver requested calls until none is left, one at a time.
    pub fn run_until_idle(&mut self) -> Result<(), DriverError> {
        while !self.requested.is_empty() {
            self.call(0)?;
        }
        Ok(())
    }

    /// Run every requested call, then deliver their outcomes together (one flush for
    /// all their puts), until none is left.
    pub fn run_until_idle_grouped(&mut self) -> Result<(), DriverError> {
        while !self.requested.is_empty() {
            while !self.requested.is_empty() {
                self.run_supplier(0)?;
            }
            self.deliver_all()?;
        }
        Ok(())
    }
}
