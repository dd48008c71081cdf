// Command gossip-peer is protokube's own test peer for kOps' gossip DNS: Debian's weaveworks
// mesh and HashiCorp memberlist, configured as kOps configures them, carrying kOps' KVState
// (protobuf, newest version wins, tombstones) on channel "dns" and, on memberlist, inside
// kOps' FullState/Part. It is driven through stdin, one command per line:
//
//	publish <name> <type> <value…>  set dns/local/<type>/<name> (the rest of the line, `\n` a newline)
//	delete <name> <type>            tombstone it
//	quit
//
// and prints, on stdout, one JSON line whenever what it knows changes:
//
//	{"unix_ms":…, "mesh":{key:value…}, "memberlist":{key:value…}, "peers":{"mesh":n,"memberlist":n}}
//
// (tombstoned keys are left out). Built in GOPATH mode against /usr/share/gocode with kOps'
// build tags (peer_name_alternative,peer_name_hash): see tests/gossip-peer/build.
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/weaveworks/mesh"
	"google.golang.org/protobuf/encoding/protowire"
)

type record struct {
	data      []byte
	tombstone bool
	version   uint64
}

// kvState is kOps' KVState with its merge rule (protokube/pkg/gossip/mesh/state.go).
type kvState struct {
	mu      sync.Mutex
	records map[string]record
	changed chan struct{}
}

func newState(changed chan struct{}) *kvState {
	return &kvState{records: map[string]record{}, changed: changed}
}

func (s *kvState) merge(in map[string]record) map[string]record {
	s.mu.Lock()
	defer s.mu.Unlock()
	delta := map[string]record{}
	for k, r := range in {
		if old, ok := s.records[k]; ok && old.version >= r.version {
			continue
		}
		s.records[k] = r
		delta[k] = r
	}
	if len(delta) > 0 {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	return delta
}

func (s *kvState) set(key string, r record) map[string]record {
	s.mu.Lock()
	now := uint64(time.Now().Unix())
	if old, ok := s.records[key]; ok && old.version >= now {
		now = old.version + 1
	}
	r.version = now
	s.records[key] = r
	all := copyRecords(s.records)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return all
}

func (s *kvState) all() map[string]record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return copyRecords(s.records)
}

func (s *kvState) values() map[string]string {
	out := map[string]string{}
	for k, r := range s.all() {
		if !r.tombstone {
			out[k] = string(r.data)
		}
	}
	return out
}

func copyRecords(in map[string]record) map[string]record {
	out := make(map[string]record, len(in))
	for k, r := range in {
		out[k] = r
	}
	return out
}

// encodeKV writes KVState{records: map<string, KVStateRecord>} (mesh.proto).
func encodeKV(records map[string]record) []byte {
	keys := make([]string, 0, len(records))
	for k := range records {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []byte
	for _, k := range keys {
		r := records[k]
		var rec []byte
		if len(r.data) > 0 {
			rec = protowire.AppendTag(rec, 1, protowire.BytesType)
			rec = protowire.AppendBytes(rec, r.data)
		}
		if r.tombstone {
			rec = protowire.AppendTag(rec, 2, protowire.VarintType)
			rec = protowire.AppendVarint(rec, 1)
		}
		if r.version != 0 {
			rec = protowire.AppendTag(rec, 3, protowire.VarintType)
			rec = protowire.AppendVarint(rec, r.version)
		}
		var entry []byte
		entry = protowire.AppendTag(entry, 1, protowire.BytesType)
		entry = protowire.AppendString(entry, k)
		entry = protowire.AppendTag(entry, 2, protowire.BytesType)
		entry = protowire.AppendBytes(entry, rec)
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, entry)
	}
	return out
}

// fields calls f for each field of a protobuf message.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := f(num, typ, v, 0); err != nil {
				return err
			}
			b = b[m:]
		case protowire.VarintType:
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			if err := f(num, typ, nil, v); err != nil {
				return err
			}
			b = b[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			b = b[m:]
		}
	}
	return nil
}

func decodeKV(b []byte) (map[string]record, error) {
	out := map[string]record{}
	err := fields(b, func(num protowire.Number, _ protowire.Type, entry []byte, _ uint64) error {
		if num != 1 {
			return nil
		}
		var key string
		var r record
		err := fields(entry, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
			switch num {
			case 1:
				key = string(v)
			case 2:
				return fields(v, func(num protowire.Number, _ protowire.Type, v []byte, n uint64) error {
					switch num {
					case 1:
						r.data = append([]byte(nil), v...)
					case 2:
						r.tombstone = n != 0
					case 3:
						r.version = n
					}
					return nil
				})
			}
			return nil
		})
		out[key] = r
		return err
	})
	return out, err
}

// encodePart writes memberlistmesh's Part{key, data}; a FullState is repeated parts (field 1).
func encodePart(key string, data []byte) []byte {
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	out = protowire.AppendString(out, key)
	out = protowire.AppendTag(out, 2, protowire.BytesType)
	return protowire.AppendBytes(out, data)
}

func decodePart(b []byte) (key string, data []byte, err error) {
	err = fields(b, func(num protowire.Number, _ protowire.Type, v []byte, _ uint64) error {
		switch num {
		case 1:
			key = string(v)
		case 2:
			data = v
		}
		return nil
	})
	return
}

// kvData is mesh's GossipData for a KVState.
type kvData map[string]record

func (d kvData) Encode() [][]byte { return [][]byte{encodeKV(d)} }
func (d kvData) Merge(other mesh.GossipData) mesh.GossipData {
	out := copyRecords(d)
	for k, r := range other.(kvData) {
		if old, ok := out[k]; !ok || old.version < r.version {
			out[k] = r
		}
	}
	return kvData(out)
}

type meshGossiper struct{ st *kvState }

func (g *meshGossiper) Gossip() mesh.GossipData { return kvData(g.st.all()) }
func (g *meshGossiper) OnGossip(b []byte) (mesh.GossipData, error) {
	in, err := decodeKV(b)
	if err != nil {
		return nil, err
	}
	if delta := g.st.merge(in); len(delta) > 0 {
		return kvData(delta), nil
	}
	return nil, nil
}
func (g *meshGossiper) OnGossipBroadcast(_ mesh.PeerName, b []byte) (mesh.GossipData, error) {
	in, err := decodeKV(b)
	if err != nil {
		return nil, err
	}
	return kvData(g.st.merge(in)), nil
}
func (g *meshGossiper) OnGossipUnicast(mesh.PeerName, []byte) error { return nil }

// memberlistDelegate is kOps' memberlistmesh delegate: the state rides in Part{"dns", KVState}.
type memberlistDelegate struct {
	st    *kvState
	queue *memberlist.TransmitLimitedQueue
}

type broadcast []byte

func (b broadcast) Invalidates(memberlist.Broadcast) bool { return false }
func (b broadcast) Message() []byte                       { return b }
func (b broadcast) Finished()                             {}

func (d *memberlistDelegate) NodeMeta(int) []byte { return nil }
func (d *memberlistDelegate) NotifyMsg(b []byte) {
	key, data, err := decodePart(b)
	if err != nil || key != "dns" {
		return
	}
	if in, err := decodeKV(data); err == nil {
		d.st.merge(in)
	}
}
func (d *memberlistDelegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.queue.GetBroadcasts(overhead, limit)
}
func (d *memberlistDelegate) LocalState(bool) []byte {
	var out []byte
	out = protowire.AppendTag(out, 1, protowire.BytesType)
	return protowire.AppendBytes(out, encodePart("dns", encodeKV(d.st.all())))
}
func (d *memberlistDelegate) MergeRemoteState(b []byte, _ bool) {
	_ = fields(b, func(num protowire.Number, _ protowire.Type, part []byte, _ uint64) error {
		if num == 1 {
			d.NotifyMsg(part)
		}
		return nil
	})
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func hostPort(s string) (string, int) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		log.Fatalf("address %q: %v", s, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		log.Fatalf("address %q: %v", s, err)
	}
	return host, p
}

func randomName() string {
	b := make([]byte, 13)
	_, _ = rand.Read(b)
	return strings.ToUpper(hex.EncodeToString(b))
}

func main() {
	name := flag.String("name", "gossip-peer", "node name (mesh's peer name is its hash)")
	meshListen := flag.String("mesh-listen", "", "mesh listen address (empty: no mesh)")
	meshSecret := flag.String("mesh-secret", "", "mesh secret (kOps always encrypts, empty or not)")
	meshSeeds := flag.String("mesh-seed", "", "mesh seeds, comma-separated")
	mlListen := flag.String("memberlist-listen", "", "memberlist listen address (empty: none)")
	mlSeeds := flag.String("memberlist-seed", "", "memberlist seeds, comma-separated")
	flag.Parse()

	changed := make(chan struct{}, 1)
	var meshState, mlState *kvState
	var meshGossip mesh.Gossip
	var router *mesh.Router
	var ml *memberlist.Memberlist
	var queue *memberlist.TransmitLimitedQueue

	if *meshListen != "" {
		meshState = newState(changed)
		host, port := hostPort(*meshListen)
		peerName, err := mesh.PeerNameFromUserInput(*name)
		if err != nil {
			log.Fatal(err)
		}
		router, err = mesh.NewRouter(mesh.Config{
			Host:               host,
			Port:               port,
			ProtocolMinVersion: mesh.ProtocolMinVersion,
			Password:           []byte(*meshSecret),
			ConnLimit:          64,
			PeerDiscovery:      true,
			TrustedSubnets:     []*net.IPNet{},
		}, peerName, *name, mesh.NullOverlay{}, log.New(ioutil.Discard, "", 0))
		if err != nil {
			log.Fatal(err)
		}
		meshGossip, err = router.NewGossip("dns", &meshGossiper{meshState})
		if err != nil {
			log.Fatal(err)
		}
		router.Start()
		router.ConnectionMaker.InitiateConnections(splitList(*meshSeeds), true)
	}
	if *mlListen != "" {
		mlState = newState(changed)
		host, port := hostPort(*mlListen)
		cfg := memberlist.DefaultLANConfig()
		cfg.Name = randomName()
		cfg.BindAddr, cfg.BindPort = host, port
		cfg.AdvertiseAddr, cfg.AdvertisePort = host, port
		cfg.GossipInterval = 200 * time.Millisecond
		cfg.PushPullInterval = 60 * time.Second
		cfg.TCPTimeout = 10 * time.Second
		cfg.ProbeTimeout = 500 * time.Millisecond
		cfg.ProbeInterval = time.Second
		cfg.GossipNodes = 3
		cfg.UDPBufferSize = 1400
		cfg.LogOutput = ioutil.Discard
		delegate := &memberlistDelegate{st: mlState}
		cfg.Delegate = delegate
		var err error
		ml, err = memberlist.Create(cfg)
		if err != nil {
			log.Fatal(err)
		}
		queue = &memberlist.TransmitLimitedQueue{NumNodes: ml.NumMembers, RetransmitMult: 3}
		delegate.queue = queue
		go func() {
			seeds := splitList(*mlSeeds)
			for len(seeds) > 0 {
				if _, err := ml.Join(seeds); err == nil {
					return
				}
				time.Sleep(time.Second)
			}
		}()
	}

	publish := func(key string, r record) {
		if meshState != nil {
			meshGossip.GossipBroadcast(kvData(meshState.set(key, r)))
		}
		if mlState != nil {
			part := encodePart("dns", encodeKV(mlState.set(key, r)))
			if len(part) > 700 {
				for _, node := range ml.Members() {
					if node.Name != ml.LocalNode().Name {
						_ = ml.SendReliable(node, part)
					}
				}
			} else {
				queue.QueueBroadcast(broadcast(part))
			}
		}
	}

	go func() {
		scanner := bufio.NewScanner(os.Stdin)
		for scanner.Scan() {
			words := strings.Fields(scanner.Text())
			switch {
			case len(words) >= 4 && words[0] == "publish":
				value := strings.ReplaceAll(strings.Join(words[3:], " "), `\n`, "\n")
				publish("dns/local/"+words[2]+"/"+words[1], record{data: []byte(value)})
			case len(words) == 3 && words[0] == "delete":
				publish("dns/local/"+words[2]+"/"+words[1], record{tombstone: true})
			case len(words) == 1 && words[0] == "quit":
				os.Exit(0)
			}
		}
		os.Exit(0)
	}()

	encoder := json.NewEncoder(os.Stdout)
	last := ""
	for {
		select {
		case <-changed:
		case <-time.After(200 * time.Millisecond):
		}
		line := map[string]interface{}{}
		peers := map[string]int{}
		if meshState != nil {
			line["mesh"] = meshState.values()
			for _, d := range router.Peers.Descriptions() {
				if d.Self {
					peers["mesh"] = d.NumConnections
				}
			}
		}
		if mlState != nil {
			line["memberlist"] = mlState.values()
			peers["memberlist"] = ml.NumMembers() - 1
		}
		line["peers"] = peers
		text, _ := json.Marshal(line)
		if string(text) == last {
			continue
		}
		last = string(text)
		line["unix_ms"] = time.Now().UnixNano() / int64(time.Millisecond)
		_ = encoder.Encode(line)
		fmt.Fprint(os.Stdout)
	}
}
