// Command verify checks airlock's signed checkpoints and proofs with
// golang.org/x/mod only (sumdb/note for the signed note, sumdb/tlog for the
// RFC 6962 tree), an implementation nobody in this project wrote, so that a
// disagreement with `airlock ledger verify`/`verify-proof` shows up as a bug
// in airlock's format (issue 23, docs/ledger.md "Checked by an independent
// implementation").
//
// Built offline from Debian's golang-go and golang-golang-x-mod-dev
// (tests/interop/sumdb/build.sh): GOPATH=/usr/share/gocode GO111MODULE=off.
//
// Usage (VKEY: a file holding `airlock ledger key`'s verifier key,
// <name>+<hex key id>+<base64 0x01||pubkey>):
//
//	verify VKEY checkpoint FILE          the note's signature and its body
//	verify VKEY inclusion PROOF          a c2sp.org/tlog-proof@v1 proof
//	                                     (`ledger prove`): tlog.CheckRecord of
//	                                     tlog.RecordHash(the extra line's bytes)
//	verify VKEY consistency OLD PROOF    airlock.ledger/consistency@v1
//	                                     (`ledger consistency`) from the checkpoint
//	                                     file OLD: tlog.CheckTree
//	verify SKEY sign FILE                signs FILE's text with note.NewSigner
//	                                     and note.Sign (SKEY: airlock's ledger/key,
//	                                     PRIVATE+KEY+<name>+<id>+<base64>) and
//	                                     prints the note: airlock must read Go's
//	                                     notes as Go reads airlock's
//
// It prints one line per check ("ok ..." or "FAIL ...") and exits 1 on any
// failure, 2 on bad usage or an unreadable file.
package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

var failed bool

func report(what string, err error) bool {
	if err != nil {
		fmt.Printf("FAIL %s: %v\n", what, err)
		failed = true
		return false
	}
	fmt.Printf("ok %s\n", what)
	return true
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: verify VKEY checkpoint FILE | inclusion PROOF | consistency OLD PROOF; verify SKEY sign FILE")
	os.Exit(2)
}

func read(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	return b
}

// parseBody reads a checkpoint body by C2SP tlog-checkpoint: the origin (a
// non-empty line), the tree size (ASCII decimal, no leading zero), the root
// hash (standard base64 of 32 bytes), then optional non-empty extension lines.
// note.Open has already required that the text ends in a newline.
func parseBody(text string) (checkpoint, error) {
	var c checkpoint
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return c, errors.New("fewer than three lines")
	}
	c.origin = lines[0]
	if c.origin == "" {
		return c, errors.New("empty origin")
	}
	s := lines[1]
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return c, fmt.Errorf("malformed size %q", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return c, fmt.Errorf("malformed size %q", s)
	}
	c.size = n
	h, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(h) != tlog.HashSize || base64.StdEncoding.EncodeToString(h) != lines[2] {
		return c, fmt.Errorf("malformed root hash %q", lines[2])
	}
	copy(c.root[:], h)
	for _, l := range lines[3:] {
		if l == "" {
			return c, errors.New("empty extension line")
		}
	}
	return c, nil
}

// openCheckpoint checks the signed note with note.Open against the one
// verifier and parses its body; the origin must be the key's name (airlock's
// origin is its key's name, docs/ledger.md).
func openCheckpoint(v note.Verifier, what string, msg []byte) (checkpoint, bool) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		report(what+": signature", err)
		return checkpoint{}, false
	}
	if len(n.Sigs) != 1 || n.Sigs[0].Name != v.Name() || n.Sigs[0].Hash != v.KeyHash() {
		report(what+": signature", errors.New("not exactly one signature by the key"))
		return checkpoint{}, false
	}
	report(what+": signature by "+v.Name(), nil)
	c, err := parseBody(n.Text)
	if err == nil && c.origin != v.Name() {
		err = fmt.Errorf("origin %q is not the key's name %q", c.origin, v.Name())
	}
	if !report(what+": body (origin, size, root)", err) {
		return c, false
	}
	return c, true
}

// proofParts splits a proof into its header lines (up to the empty line) and
// the checkpoint after it.
func proofParts(b []byte) ([]string, []byte, error) {
	i := bytes.Index(b, []byte("\n\n"))
	if i < 0 {
		return nil, nil, errors.New("no empty line before the checkpoint")
	}
	return strings.Split(string(b[:i]), "\n"), b[i+2:], nil
}

func hashes(lines []string) ([]tlog.Hash, error) {
	var hs []tlog.Hash
	for _, l := range lines {
		h, err := tlog.ParseHash(l)
		if err != nil {
			return nil, fmt.Errorf("malformed hash %q", l)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

func decimal(line, key string) (int64, error) {
	s := strings.TrimPrefix(line, key+" ")
	if s == line {
		return 0, fmt.Errorf("no %q line", key)
	}
	if s == "" || (len(s) > 1 && s[0] == '0') || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("malformed %s %q", key, s)
	}
	return strconv.ParseInt(s, 10, 64)
}

func inclusion(v note.Verifier, path string) {
	head, cp, err := proofParts(read(path))
	if err == nil && (len(head) < 3 || head[0] != "c2sp.org/tlog-proof@v1") {
		err = errors.New("not a c2sp.org/tlog-proof@v1 proof with an entry")
	}
	if !report("inclusion proof: header", err) {
		return
	}
	var leaf []byte
	if es := strings.TrimPrefix(head[1], "extra "); es != head[1] {
		leaf, err = base64.StdEncoding.Strict().DecodeString(es)
	} else {
		err = errors.New("no extra line (the entry's bytes)")
	}
	var index int64
	if err == nil {
		index, err = decimal(head[2], "index")
	}
	var p tlog.RecordProof
	if err == nil {
		p, err = hashes(head[3:])
	}
	if !report("inclusion proof: parsed", err) {
		return
	}
	c, ok := openCheckpoint(v, "inclusion proof's checkpoint", cp)
	if !ok {
		return
	}
	if index >= c.size {
		report("inclusion proof: index", fmt.Errorf("index %d not below size %d", index, c.size))
		return
	}
	err = tlog.CheckRecord(p, c.size, c.root, index, tlog.RecordHash(leaf))
	report(fmt.Sprintf("inclusion of entry %d in the tree of size %d (tlog.CheckRecord)", index, c.size), err)
}

func consistency(v note.Verifier, oldPath, path string) {
	old, ok := openCheckpoint(v, "old checkpoint", read(oldPath))
	if !ok {
		return
	}
	head, cp, err := proofParts(read(path))
	if err == nil && (len(head) < 2 || head[0] != "airlock.ledger/consistency@v1") {
		err = errors.New("not an airlock.ledger/consistency@v1 proof")
	}
	var m int64
	if err == nil {
		m, err = decimal(head[1], "old")
	}
	var p tlog.TreeProof
	if err == nil {
		p, err = hashes(head[2:])
	}
	if err == nil && m != old.size {
		err = fmt.Errorf("the proof is from size %d, the old checkpoint has %d", m, old.size)
	}
	if !report("consistency proof: parsed", err) {
		return
	}
	c, ok := openCheckpoint(v, "new checkpoint", cp)
	if !ok {
		return
	}
	if c.origin != old.origin {
		report("consistency: origin", fmt.Errorf("%q is not %q", c.origin, old.origin))
		return
	}
	if m > c.size {
		report("consistency: sizes", fmt.Errorf("old size %d above new size %d", m, c.size))
		return
	}
	if m == c.size {
		if c.root != old.root {
			err = errors.New("same size, different roots")
		}
		report(fmt.Sprintf("consistency of size %d with itself", m), err)
		return
	}
	err = tlog.CheckTree(p, c.size, c.root, m, old.root)
	report(fmt.Sprintf("consistency from size %d to size %d (tlog.CheckTree)", m, c.size), err)
}

func main() {
	if len(os.Args) < 4 {
		usage()
	}
	if os.Args[2] == "sign" && len(os.Args) == 4 {
		signer, err := note.NewSigner(strings.TrimSpace(string(read(os.Args[1]))))
		if err != nil {
			fmt.Fprintf(os.Stderr, "signer key: %v\n", err)
			os.Exit(2)
		}
		msg, err := note.Sign(&note.Note{Text: string(read(os.Args[3]))}, signer)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sign: %v\n", err)
			os.Exit(1)
		}
		os.Stdout.Write(msg)
		return
	}
	vkey := strings.TrimSpace(string(read(os.Args[1])))
	v, err := note.NewVerifier(vkey)
	if err != nil {
		fmt.Printf("FAIL verifier key: %v\n", err)
		os.Exit(1)
	}
	switch args := os.Args[2:]; {
	case args[0] == "checkpoint" && len(args) == 2:
		openCheckpoint(v, "checkpoint", read(args[1]))
	case args[0] == "inclusion" && len(args) == 2:
		inclusion(v, args[1])
	case args[0] == "consistency" && len(args) == 3:
		consistency(v, args[1], args[2])
	default:
		usage()
	}
	if failed {
		os.Exit(1)
	}
}
