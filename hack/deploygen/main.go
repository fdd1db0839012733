// Command deploygen renders and generates Flotilla's install artifacts from config/, the
// single source of truth (see internal/deploy):
//
//	deploygen installer [-image IMG] [-o dist/install.yaml]   render config/default
//	deploygen helm                                             regenerate charts/flotilla's CRDs and RBAC
//	deploygen bundle [-version V] [-image IMG] [-channels C]   generate the OLM bundle
//
// It runs from the repository root (the Makefile's targets build-installer, helm and bundle
// call it) and needs no kubectl, kustomize, helm or operator-sdk binary.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flotilla-io/flotilla/internal/deploy"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "deploygen:", err)
		os.Exit(1)
	}
}

func usage() error {
	return fmt.Errorf("usage: deploygen installer|helm|bundle [flags] (-h for each command's flags)")
}

func run(args []string) error {
	if len(args) == 0 {
		return usage()
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	root := fs.String("root", ".", "Repository root.")
	switch cmd {
	case "installer":
		image := fs.String("image", "", "Manager image (repository:tag); empty keeps config/manager's.")
		out := fs.String("o", "dist/install.yaml", "Output file; - for standard output.")
		if err := fs.Parse(args); err != nil {
			return err
		}
		data, err := deploy.Installer(*root, *image)
		if err != nil {
			return err
		}
		if *out == "-" {
			_, err = os.Stdout.Write(data)
			return err
		}
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "deploygen: wrote %s\n", *out)
		return nil
	case "helm":
		if err := fs.Parse(args); err != nil {
			return err
		}
		if err := deploy.GenerateChart(*root); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "deploygen: wrote %s/{%s,%s}\n", deploy.ChartDir, deploy.ChartCRDDir, deploy.ChartRBACTemplate)
		return nil
	case "bundle":
		d := deploy.DefaultBundleOptions
		version := fs.String("version", d.Version, "Operator version (semver, without v).")
		image := fs.String("image", "", "Manager image; defaults to "+deploy.DefaultImageRepository+":v<version>.")
		channels := fs.String("channels", strings.Join(d.Channels, ","), "Comma-separated channels.")
		defaultChannel := fs.String("default-channel", d.DefaultChannel, "Default channel.")
		replaces := fs.String("replaces", "", "Name of the CSV this one replaces, if any.")
		if err := fs.Parse(args); err != nil {
			return err
		}
		o := d
		o.Version, o.Image, o.DefaultChannel, o.Replaces = *version, *image, *defaultChannel, *replaces
		o.Channels = strings.Split(*channels, ",")
		if o.Image == "" {
			o.Image = deploy.DefaultImageRepository + ":v" + o.Version
		}
		if err := deploy.GenerateBundle(*root, o); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "deploygen: wrote %s/ and %s (%s.v%s, image %s)\n", deploy.BundleDir, deploy.BundleDockerfile, o.Package, o.Version, o.Image)
		return nil
	default:
		return usage()
	}
}
