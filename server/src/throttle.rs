//! Slowing down wrong tokens, per client address, in bounded memory.
//!
//! Each wrong token a client presents moves that client's next release
//! [`PENALTY`] later, and its 401 waits until then: wrong answers to one
//! client come out at most one per [`PENALTY`] however many it sends at
//! once, so 1,000 guesses take at least 100 s. A client may have at most
//! [`MAX_HELD`] wrong answers waiting; beyond that its requests that carry
//! a credential get 429 (with `Retry-After`) without being compared, so
//! they are not guesses either. A right token is compared and served at
//! once, whatever the client's penalty: a client that mistyped, or shares
//! an address with a guesser, is not locked out while it has fewer than
//! [`MAX_HELD`] wrong answers waiting.
//!
//! Clients are told apart by IP address, IPv6 by its /64 (one host or
//! subnet has a whole /64 to draw addresses from). At most [`MAX_CLIENTS`]
//! are remembered: a client with nothing waiting and its release past is
//! forgotten first, then the one whose release is soonest.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use tokio::time::Instant;

/// How much later each wrong token moves its client's next release.
pub const PENALTY: Duration = Duration::from_millis(100);
/// Most wrong answers one client may have waiting.
pub const MAX_HELD: u32 = 8;
/// Most clients remembered.
pub const MAX_CLIENTS: usize = 4096;

/// A client as the throttle tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The key of a client at `address` (IPv6: its /64; IPv4-mapped IPv6: the IPv4 address).
    pub fn of(address: IpAddr) -> ClientKey {
        match address.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                ClientKey(IpAddr::V6(prefix.into()))
            }
            v4 => ClientKey(v4),
        }
    }
}

#[derive(Clone, Copy)]
struct Entry {
    release: Instant,
    held: u32,
}

/// See the module documentation.
#[derive(Default)]
pub struct Throttle {
    clients: parking_lot::Mutex<HashMap<ClientKey, Entry>>,
}

/// A wrong answer waiting: counts itself out when dropped (answered, or
/// the client went away).
pub struct Held<'a> {
    throttle: &'a Throttle,
    client: ClientKey,
    release: Instant,
}

impl Held<'_> {
    /// Waits until this wrong answer may be sent.
    pub async fn wait(self) {
        tokio::time::sleep_until(self.release).await;
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.throttle.clients.lock().get_mut(&self.client) {
            entry.held = entry.held.saturating_sub(1);
        }
    }
}

impl Throttle {
    /// `Ok` when `client` may present a credential now, else how long until
    /// one of its waiting wrong answers is released.
    pub fn admit(&self, client: ClientKey) -> Result<(), Duration> {
        let clients = self.clients.lock();
        match clients.get(&client) {
            Some(entry) if entry.held >= MAX_HELD => {
                Err(entry.release.saturating_duration_since(Instant::now()).max(PENALTY))
            }
            _ => Ok(()),
        }
    }

    /// Records a wrong token from `client`: the answer to hold until its
    /// release ([`Held::wait`]).
    pub fn wrong(&self, client: ClientKey) -> Held<'_> {
        let now = Instant::now();
        let mut clients = self.clients.lock();
        if !clients.contains_key(&client) && clients.len() >= MAX_CLIENTS {
            forget_one(&mut clients, now);
        }
        let entry = clients.entry(client).or_insert(Entry { release: now, held: 0 });
        entry.release = entry.release.max(now) + PENALTY;
        entry.held += 1;
        Held { throttle: self, client, release: entry.release }
    }

    /// Clients remembered now.
    pub fn remembered(&self) -> usize {
        self.clients.lock().len()
    }
}

/// Forgets the clients with nothing waiting and their release past, or,
/// if there are none, the one whose release is soonest.
fn forget_one(clients: &mut HashMap<ClientKey, Entry>, now: Instant) {
    clients.retain(|_, entry| entry.held > 0 || entry.release > now);
    if clients.len() < MAX_CLIENTS {
        return;
    }
    let soonest = clients.iter().min_by_key(|(_, entry)| (entry.held, entry.release)).map(|(key, _)| *key);
    if let Some(key) = soonest {
        clients.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(text: &str) -> ClientKey {
        ClientKey::of(text.parse().unwrap())
    }

    #[test]
    fn ipv6_clients_are_told_apart_by_their_64_and_mapped_ipv4_by_its_address() {
        assert_eq!(client("2001:db8::1"), client("2001:db8::ffff:1"));
        assert_ne!(client("2001:db8::1"), client("2001:db8:0:1::1"));
        assert_eq!(client("::ffff:10.0.0.1"), client("10.0.0.1"));
        assert_ne!(client("10.0.0.1"), client("10.0.0.2"));
    }

    #[tokio::test(start_paused = true)]
    async fn wrong_answers_come_out_one_penalty_apart_and_beyond_the_most_held_are_refused() {
        let throttle = Throttle::default();
        let guesser = client("10.0.0.1");
        let start = Instant::now();
        let held: Vec<Held> = (0..MAX_HELD).map(|_| throttle.wrong(guesser)).collect();
        assert!(throttle.admit(guesser).is_err(), "the most answers are waiting");
        assert_eq!(throttle.admit(client("10.0.0.2")), Ok(()), "another client is not held up");
        for (index, answer) in held.into_iter().enumerate() {
            answer.wait().await;
            assert_eq!(start.elapsed(), PENALTY * (index as u32 + 1));
        }
        assert_eq!(throttle.admit(guesser), Ok(()));
    }

    /// On a paused clock nothing expires meanwhile: the table is full and no fuller.
    #[tokio::test(start_paused = true)]
    async fn memory_is_bounded() {
        let throttle = Throttle::default();
        for index in 0..MAX_CLIENTS as u32 + 100 {
            drop(throttle.wrong(ClientKey::of(IpAddr::from(index.to_be_bytes()))));
        }
        assert_eq!(throttle.remembered(), MAX_CLIENTS);
    }
}
