package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// cliDoc is docs/cli.md, relative to this package.
const cliDoc = "../../docs/cli.md"

// renderCLIDoc renders the reference of every command of the tree: its synopsis, description,
// examples and flags, in the order of the tree, as `--help` prints them.
func renderCLIDoc(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString("# kubectl flotilla\n\n")
	b.WriteString("<!-- Generated from cmd/kubectl-flotilla by `make docs` (TestCLIDoc); do not edit. -->\n\n")
	b.WriteString("The reference of every `kubectl flotilla` command, as `--help` prints it. `make build` puts\n")
	b.WriteString("the plugin at `bin/kubectl-flotilla`; on your `PATH` it is `kubectl flotilla`. The guides show\n")
	b.WriteString("the commands at work: [fleet view and dashboard](guides/fleet-view-and-dashboard.md),\n")
	b.WriteString("[join and unjoin](guides/join-and-unjoin.md), [Pull mode](guides/pull-mode.md),\n")
	b.WriteString("[cordon, taint and rebalance](guides/cordon-taint-rebalance.md).\n\n")
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		cmds = append(cmds, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, c := range cmds[1:] {
		fmt.Fprintf(&b, "- [`%s`](#%s)\n", c.CommandPath(), anchorOf(c.CommandPath()))
	}
	b.WriteString("\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "## %s\n\n", c.CommandPath())
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c.Short))
		if long := strings.TrimSpace(c.Long); long != "" {
			fmt.Fprintf(&b, "```text\n%s\n```\n\n", long)
		}
		if c.Runnable() {
			fmt.Fprintf(&b, "```text\n%s\n```\n\n", c.UseLine())
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```text\n%s\n```\n\n", strings.TrimRight(c.Example, "\n"))
		}
		if flags := c.NonInheritedFlags().FlagUsages(); flags != "" {
			fmt.Fprintf(&b, "Flags:\n\n```text\n%s```\n\n", flags)
		}
		if c == root {
			continue
		}
		if flags := c.InheritedFlags().FlagUsages(); flags != "" {
			fmt.Fprintf(&b, "Global flags:\n\n```text\n%s```\n\n", flags)
		}
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

func anchorOf(path string) string { return strings.ReplaceAll(strings.ToLower(path), " ", "-") }

// TestCLIDoc keeps docs/cli.md current: it fails when the file differs from the command tree;
// UPDATE_GOLDEN=1 (make docs) rewrites it.
func TestCLIDoc(t *testing.T) {
	root := newRootCommand()
	got := append(renderCLIDoc(root), '\n')
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(cliDoc, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s is stale: run make docs (UPDATE_GOLDEN=1 go test ./cmd/kubectl-flotilla/ -run TestCLIDoc)", filepath.Clean(cliDoc))
	}
}

// TestCommandsHaveExamples: every runnable command's --help shows an example.
func TestCommandsHaveExamples(t *testing.T) {
	root := newRootCommand()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c.Runnable() && strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example: add one (its --help and docs/cli.md show it)", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}
