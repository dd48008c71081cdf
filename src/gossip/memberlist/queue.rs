//! memberlist's broadcast queue (`TransmitLimitedQueue`): messages waiting to ride on the next
//! gossip packets, each sent at most `mult × ⌈log10(n + 1)⌉` times, the least sent first (the
//! newest first among equals); a message about a key (a member's name) replaces an older one
//! about the same key. Pure.

/// The bytes a packet spends per message it bundles (a compound message's length field).
pub(crate) const COMPOUND_OVERHEAD: usize = 2;
/// Messages held at most: the oldest are dropped past it (kOps prunes at 4 096 too).
const MAX_QUEUED: usize = 4096;

/// A queued message.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Item {
    message: Vec<u8>,
    key: Option<String>,
    transmits: u32,
    /// Order of arrival: newer is larger.
    id: u64,
    /// Told when the message has gone its last time (a leave waits on it).
    finished: Option<u64>,
}

/// The queue.
#[derive(Debug, Default)]
pub(crate) struct Queue {
    items: Vec<Item>,
    next_id: u64,
    /// Tokens of messages sent their last time, not yet collected.
    done: Vec<u64>,
}

/// How many times a message is sent in a cluster of `nodes` (memberlist's `retransmitLimit`).
pub(crate) fn retransmit_limit(mult: u32, nodes: usize) -> u32 {
    let scale = ((nodes + 1) as f64).log10().ceil() as u32;
    mult * scale.max(1)
}

impl Queue {
    /// Queues `message`; one with the same `key` that waits is replaced.
    pub(crate) fn push(&mut self, message: Vec<u8>, key: Option<String>) {
        self.push_tracked(message, key, None);
    }

    /// Queues `message` and says `token` in [`Queue::finished`] once it has gone its last time.
    pub(crate) fn push_tracked(
        &mut self,
        message: Vec<u8>,
        key: Option<String>,
        token: Option<u64>,
    ) {
        if let Some(key) = &key {
            let mut replaced = Vec::new();
            self.items.retain(|item| {
                let same = item.key.as_ref() == Some(key);
                if same {
                    replaced.extend(item.finished);
                }
                !same
            });
            self.done.extend(replaced);
        }
        self.next_id += 1;
        self.items.push(Item {
            message,
            key,
            transmits: 0,
            id: self.next_id,
            finished: token,
        });
        if self.items.len() > MAX_QUEUED {
            self.items.sort_by_key(|item| std::cmp::Reverse(item.id));
            let dropped = self.items.split_off(MAX_QUEUED);
            self.done
                .extend(dropped.iter().filter_map(|item| item.finished));
        }
    }

    /// Messages for one packet of at most `limit` bytes (each costing `overhead` more), in a
    /// cluster of `nodes`, sent at most `mult × ⌈log10(nodes + 1)⌉` times each.
    pub(crate) fn take(
        &mut self,
        overhead: usize,
        limit: usize,
        mult: u32,
        nodes: usize,
    ) -> Vec<Vec<u8>> {
        let most = retransmit_limit(mult, nodes);
        let mut order: Vec<usize> = (0..self.items.len()).collect();
        order.sort_by_key(|&i| (self.items[i].transmits, std::cmp::Reverse(self.items[i].id)));
        let (mut used, mut out, mut spent) = (0, Vec::new(), Vec::new());
        for i in order {
            let item = &mut self.items[i];
            let cost = item.message.len() + overhead;
            if used + cost > limit {
                continue;
            }
            used += cost;
            out.push(item.message.clone());
            item.transmits += 1;
            if item.transmits >= most {
                spent.push(i);
            }
        }
        spent.sort_unstable_by(|a, b| b.cmp(a));
        for i in spent {
            let item = self.items.remove(i);
            self.done.extend(item.finished);
        }
        out
    }

    /// Messages waiting.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the message queued with `token` has gone its last time (or was replaced).
    pub(crate) fn finished(&mut self, token: u64) -> bool {
        let before = self.done.len();
        self.done.retain(|t| *t != token);
        before != self.done.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retransmit_limit_grows_with_the_log_of_the_cluster() {
        assert_eq!(retransmit_limit(4, 0), 4);
        assert_eq!(retransmit_limit(4, 9), 4);
        assert_eq!(retransmit_limit(4, 10), 8);
        assert_eq!(retransmit_limit(3, 30), 6);
        assert_eq!(retransmit_limit(3, 100), 9);
    }

    #[test]
    fn each_message_goes_its_limit_of_times_the_least_sent_first() {
        let mut queue = Queue::default();
        queue.push(vec![1; 10], None);
        queue.push(vec![2; 10], None);
        // Room for one: the newest of the least sent goes first.
        assert_eq!(queue.take(2, 12, 1, 5), [vec![2; 10]]);
        assert_eq!(queue.take(2, 12, 1, 5), [vec![1; 10]]);
        assert_eq!(queue.len(), 0, "each went its one time");
        queue.push(vec![3; 10], None);
        for _ in 0..4 {
            assert_eq!(queue.take(2, 1400, 4, 5).len(), 1);
        }
        assert!(queue.take(2, 1400, 4, 5).is_empty());
    }

    #[test]
    fn a_newer_message_about_a_member_replaces_the_older_and_a_tracked_one_says_when_done() {
        let mut queue = Queue::default();
        queue.push_tracked(b"suspect m1".to_vec(), Some("m1".into()), Some(7));
        queue.push(b"dead m1".to_vec(), Some("m1".into()));
        assert!(queue.finished(7), "replaced is done");
        assert!(!queue.finished(7), "said once");
        queue.push_tracked(b"leave".to_vec(), Some("me".into()), Some(8));
        assert_eq!(queue.take(2, 1400, 1, 1).len(), 2);
        assert!(queue.finished(8));
        // A message larger than the packet waits; smaller ones still go.
        queue.push(vec![0; 2000], None);
        queue.push(vec![1; 10], None);
        assert_eq!(queue.take(2, 1400, 1, 1), [vec![1; 10]]);
        assert_eq!(queue.len(), 1);
    }
}
