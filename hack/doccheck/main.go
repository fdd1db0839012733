// Command doccheck checks the repository's markdown (README.md, docs/, test/testdata and every
// other tracked .md outside bin/ and dot directories) with internal/doccheck: relative links and
// #anchors resolve, repository paths named in code exist, the getting-started page's and the
// guides' shell blocks say whether the docs test runs them, and included blocks are current
// copies of their files. make verify runs it; -fix (make docs) first refreshes the included
// blocks.
//
//	go run ./hack/doccheck [-fix] [-root DIR]
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla-io/flotilla/internal/doccheck"
)

func main() {
	fix := flag.Bool("fix", false, "rewrite the blocks included from files (<!-- include: PATH -->) before checking")
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root, *fix); err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(1)
	}
}

func run(root string, fix bool) error {
	files, err := markdownFiles(root)
	if err != nil {
		return err
	}
	if fix {
		for _, f := range files {
			src, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				return err
			}
			out, err := doccheck.Refresh(src, func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, filepath.FromSlash(p))) })
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			if string(out) != string(src) {
				if err := os.WriteFile(filepath.Join(root, f), out, 0o644); err != nil {
					return err
				}
				fmt.Println("refreshed", f)
			}
		}
	}
	problems := doccheck.Check(os.DirFS(root), files)
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, p)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d problem(s) in %d markdown files", len(problems), len(files))
	}
	fmt.Printf("doccheck: %d markdown files, links, anchors, paths, run markers and includes all good\n", len(files))
	return nil
}

// markdownFiles lists the .md files under root as slash paths, skipping bin/, build outputs and
// dot directories (.git, .fleet).
func markdownFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bin" || rel == "dist" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".md") {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}
