//! What neighbours say to each other on a link, in [`LinkFrame`]s in the codec of [`super`]: a
//! [`LinkFrame::Hello`] each way on a new connection's first stream, then data frames in
//! batches, one QUIC stream each, read in the order they were opened.
//!
//! Each hello gives the serial of the sender's revocation list; a side whose list is newer
//! hands it over on the hello stream ([`LinkFrame::Revocations`]), and so does a node that
//! takes a newer list later, to every neighbour not known to hold it. The list is the CA-signed
//! file as is: the receiver checks the signature, as it would a pushed one.
//!
//! The link makes the paper's channel real: reliable and FIFO between two processes, even across
//! reconnections. Every data frame has a sequence number per (sender, incarnation). Within a
//! connection QUIC's acknowledgement of a batch's stream acknowledges its frames; on a new
//! connection each side's hello says what it already handled, so the sender resends exactly the
//! frames that were not.

use crate::routing::down::Report;
use crate::{NodeId, Topology};
use serde::{Deserialize, Serialize};

/// One frame on a link.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum LinkFrame {
    /// The first frame each way on a new connection.
    Hello(Hello),
    /// A packet, encoded apart ([`super::encode_body`] of a `Packet<Message>`), so that a
    /// corrupted packet is a counted drop and never breaks the link's framing.
    Data {
        seq: u64,
        #[serde(with = "serde_bytes")]
        packet: Vec<u8>,
        /// Set on a packet the chaos tooling corrupted, and carried along with it: how the
        /// daemons measure that corrupted packets are flushed within the bound. Outside the
        /// packet's bytes, and never read by routing.
        mark: Option<ChaosMark>,
    },
    /// Every data frame up to `upto` (of the receiver's current view of the sender's
    /// incarnation) has been handled. Sent on the hello stream to answer a knock: anything sent
    /// on a stale connection makes it draw a reset.
    Ack { upto: u64 },
    /// The sender's revocation list, signed by the cluster CA (the bytes of the daemon's
    /// `keys::SignedFile`), sent on the hello stream when the sender knows the receiver holds an
    /// older one. Read from the network: the receiver checks it before anything else.
    Revocations {
        #[serde(with = "serde_bytes")]
        signed: Vec<u8>,
    },
    /// Reports of links taken for down or up, made by the sender or passed on by it
    /// ([`crate::routing::down`]), on the hello stream: each new one to every neighbour but the
    /// one it came from, and every one held to a neighbour on a new connection.
    Reports(Vec<Report>),
}

/// Where and when a packet was corrupted, and how far it has gone since.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ChaosMark {
    /// The corrupting node's wall clock, microseconds since the Unix epoch.
    pub corrupted_at_us: u64,
    /// Hops made since the corruption.
    pub hops: u16,
}

/// A node introducing itself on a new connection.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Hello {
    /// Must match the node its certificate names.
    pub node: NodeId,
    /// Must match the receiver's topology.
    pub topology: Topology,
    /// Random at every start of the process: sequence numbers are per incarnation.
    pub incarnation: u64,
    /// What the sender of this hello has handled from the peer, if it knows the peer.
    pub received: Option<Received>,
    /// The serial of the revocation list in force at the sender (0: none): the peer hands its
    /// own over only if it is newer.
    pub revocation_serial: u64,
    /// The sender's process, for a neighbour on the same machine to see it exit without
    /// probing it (`None`: not said). Only a hint: a neighbour that cannot find this very
    /// process on its own machine ignores it.
    pub process: Option<ProcessMark>,
}

/// Which process on which machine sent a hello: enough for a receiver that runs under the same
/// boot of the same kernel and in the same process-id namespace to find it, and to tell it from
/// a later process that reuses its id.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ProcessMark {
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`), as 16 bytes.
    pub boot: [u8; 16],
    /// The inode of the sender's process-id namespace (`/proc/self/ns/pid`).
    pub pid_namespace: u64,
    /// The process id, in that namespace.
    pub pid: u32,
    /// When the process started, in clock ticks after boot (`/proc/<pid>/stat`, field 22).
    pub started: u64,
}

/// The last data frame handled from one incarnation of a peer.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Received {
    pub incarnation: u64,
    pub upto: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{decode_frame, encode_frame};

    #[test]
    fn frames_round_trip() {
        let frames = [
            LinkFrame::Hello(Hello {
                node: NodeId(5),
                topology: "eh:2,2".parse().unwrap(),
                incarnation: u64::MAX,
                received: Some(Received {
                    incarnation: 7,
                    upto: 99,
                }),
                revocation_serial: 3,
                process: Some(ProcessMark {
                    boot: [7; 16],
                    pid_namespace: 4026531836,
                    pid: 4_194_304,
                    started: u64::MAX,
                }),
            }),
            LinkFrame::Data {
                seq: 1,
                packet: vec![1, 2, 3],
                mark: None,
            },
            LinkFrame::Data {
                seq: 2,
                packet: vec![],
                mark: Some(ChaosMark {
                    corrupted_at_us: 5,
                    hops: 3,
                }),
            },
            LinkFrame::Ack { upto: 1 << 40 },
            LinkFrame::Revocations {
                signed: vec![0xca; 300],
            },
            LinkFrame::Reports(vec![Report {
                reporter: NodeId(1),
                subject: NodeId(3),
                down: true,
                stamp: u64::MAX,
            }]),
        ];
        for frame in frames {
            let bytes = encode_frame(&frame).unwrap();
            assert_eq!(decode_frame::<LinkFrame>(&bytes), Ok(frame));
        }
    }
}
