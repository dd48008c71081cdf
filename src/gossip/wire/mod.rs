//! The bytes of kOps' gossip: mesh (its handshake, encryption, gob values, topology) and
//! memberlist (msgpack messages, packets, compressed streams), both carrying kOps' `KVState`.
//! Pure: no sockets here. Each decoder takes untrusted bytes and bounds what it allocates.

pub(crate) mod gob;
pub(crate) mod memberlist;
pub(crate) mod mesh;
pub(crate) mod mesh_crypto;
pub(crate) mod protobuf;

/// The bytes a test vector writes in hex (the vectors of kOps' wire notes and of Go's output).
#[cfg(test)]
pub(crate) fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[cfg(test)]
mod arbitrary_bytes {
    //! Every decoder faces arbitrary bytes: an error or a value, never a panic; what they
    //! allocate is bounded by their input (counts are checked against the bytes left).
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn no_decoder_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = super::protobuf::KvState::decode(&bytes);
            let _ = super::protobuf::FullState::decode(&bytes);
            let mut reader = super::gob::GobReader::new(&bytes);
            while !reader.is_empty() && reader.value().is_ok() {}
            let _ = super::mesh::GossipMessage::decode(&bytes);
            let _ = super::mesh::Features::decode(&bytes);
            let _ = super::mesh::decode_topology(&bytes);
            let _ = super::memberlist::messages_of_packet(&bytes);
            let _ = super::memberlist::message_of_stream(&bytes);
            let _ = super::memberlist::decode::<super::memberlist::Ping>(&mut &bytes[..]);
        }

        #[test]
        fn gob_streams_with_a_valid_start_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
            // A map definition, then anything.
            let mut bytes = vec![0x0e, 0xff, 0x81, 0x04, 0x01, 0x02, 0xff, 0x82, 0x00, 0x01, 0x0c, 0x01, 0x0c, 0x00, 0x00];
            bytes.extend(tail);
            let mut reader = super::gob::GobReader::new(&bytes);
            while !reader.is_empty() && reader.value().is_ok() {}
        }
    }
}
