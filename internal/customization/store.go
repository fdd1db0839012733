package customization

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// numOps is len(interpreter.Operations).
const numOps = 8

func init() {
	if len(interpreter.Operations) != numOps {
		panic("customization: numOps is out of date")
	}
}

// Options are the budgets of the scripts' calls. Zero values take the defaults.
type Options struct {
	// Timeout is the time one call may take; default 200ms. A script still running then
	// is stopped with an error wrapping ErrTimeBudget.
	Timeout time.Duration
	// MemoryBudget is what one call may allocate, in bytes, as the sandbox accounts it:
	// strings, tables, table fields and closures the script makes (see doc.go); default
	// 16 MiB. Over it, the call fails with an error wrapping ErrMemoryBudget.
	MemoryBudget int64
	// MaxStringBytes is the longest string a script may make; default 1 MiB.
	MaxStringBytes int
	// CallStackSize is how deep Lua calls may nest; default 200.
	CallStackSize int
	// RegistryMaxSize is how many values Lua's value stack may hold (locals, arguments,
	// results of unpack), 16 bytes each; default 65536. It starts at 1024.
	RegistryMaxSize int
	// MaxDepth is how deeply values passed between Go and Lua may nest; default 100.
	MaxDepth int
	// MaxElements is how many values (scalars, tables) one argument or result passed
	// between Go and Lua may hold; default 100000.
	MaxElements int
	// IdleStates is how many Lua states each customization keeps for reuse; default
	// GOMAXPROCS.
	IdleStates int
	// OnFailure is called, synchronously, whenever a script fails at run time; it must be
	// cheap. The caller gets the same error.
	OnFailure func(Failure)
}

// Failure describes a script that failed at run time.
type Failure struct {
	// Customization is the name of the ResourceInterpreterCustomization whose script failed.
	Customization string
	// Operation is the operation that failed.
	Operation interpreter.Operation
	// Object is the object the script ran on: "apiVersion/kind namespace/name", or
	// "apiVersion/kind name" when it has no namespace.
	Object string
	// Err is the error, as the caller got it.
	Err error
	// Builtin: the customization is one Flotilla ships (ApplyBuiltin), not an object.
	Builtin bool
}

// limits are Options with the defaults filled in.
type limits struct {
	timeout         time.Duration
	memory          int64
	maxString       int
	callStackSize   int
	registrySize    int
	registryMaxSize int
	maxDepth        int
	maxElements     int
	idle            int
}

func (o Options) limits() *limits {
	or := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	l := &limits{
		timeout:         o.Timeout,
		memory:          o.MemoryBudget,
		maxString:       or(o.MaxStringBytes, 1<<20),
		callStackSize:   or(o.CallStackSize, 200),
		registryMaxSize: or(o.RegistryMaxSize, 65536),
		maxDepth:        or(o.MaxDepth, 100),
		maxElements:     or(o.MaxElements, 100000),
		idle:            or(o.IdleStates, runtime.GOMAXPROCS(0)),
	}
	if l.timeout <= 0 {
		l.timeout = 200 * time.Millisecond
	}
	if l.memory <= 0 {
		l.memory = 16 << 20
	}
	l.registrySize = min(1024, l.registryMaxSize)
	return l
}

// Store holds the customizations in use and runs their scripts. It implements
// interpreter.Customizations and is safe for concurrent use.
type Store struct {
	lim       *limits
	onFailure func(Failure)

	mu     sync.Mutex // serializes Apply and Remove
	byName map[string]*compiled
	index  atomic.Pointer[map[schema.GroupVersionKind]*kindCustomization]
}

// compiled is one customization in use.
type compiled struct {
	name    string
	gvk     schema.GroupVersionKind
	scripts [numOps]*script
	hash    string
	pool    *pool
	// builtin is a customization Flotilla ships (ApplyBuiltin): it serves only the
	// operations that no other customization of its kind scripts.
	builtin bool
}

var _ interpreter.Customizations = (*Store)(nil)

// NewStore makes an empty store.
func NewStore(o Options) *Store {
	s := &Store{lim: o.limits(), onFailure: o.OnFailure, byName: map[string]*compiled{}}
	s.index.Store(&map[schema.GroupVersionKind]*kindCustomization{})
	return s
}

// Apply compiles every script of the customization and puts it in use, in place of an
// earlier version of the same name. When a script does not compile, the customization of
// this name is taken out of use and the error names the operation and the line.
func (s *Store) Apply(ric *configv1alpha1.ResourceInterpreterCustomization) error {
	return s.apply(ric, false)
}

// ApplyBuiltin puts in use a customization that Flotilla ships, at the lowest precedence:
// for each operation, a customization applied with Apply that scripts it wins, whatever
// their names. Built-ins have names of their own, apart from Apply's: Remove does not take
// them out of use, and a customization applied with Apply under the same name does not
// replace them. Errors are Apply's.
func (s *Store) ApplyBuiltin(ric *configv1alpha1.ResourceInterpreterCustomization) error {
	return s.apply(ric, true)
}

func (s *Store) apply(ric *configv1alpha1.ResourceInterpreterCustomization, builtin bool) error {
	if ric == nil {
		return errors.New("no customization")
	}
	name := ric.Name
	key := name
	if builtin {
		key = "\x00" + name // no object name has a NUL
	}
	scripts, hash, err := compileSpec(ric.Spec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && name == "" {
		err = errors.New("the customization has no name")
	}
	if err != nil {
		delete(s.byName, key)
		s.reindex()
		return fmt.Errorf("customization %q: %w", name, err)
	}
	if old, ok := s.byName[key]; ok && old.hash == hash {
		return nil
	}
	gvk, _ := target(ric.Spec.Target)
	s.byName[key] = &compiled{name: name, gvk: gvk, scripts: scripts, hash: hash, pool: newPool(s.lim), builtin: builtin}
	s.reindex()
	return nil
}

// Remove takes the customization of this name out of use.
func (s *Store) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[name]; ok {
		delete(s.byName, name)
		s.reindex()
	}
}

// Lookup returns the customization of gvk: for each operation, the script of the first
// customization by name that scripts it, built-ins (ApplyBuiltin) after all others.
func (s *Store) Lookup(gvk schema.GroupVersionKind) (interpreter.Customization, bool) {
	k, ok := (*s.index.Load())[gvk]
	if !ok {
		return nil, false
	}
	return k, true
}

// Revision identifies the scripts of every customization of gvk; "" when there are none.
// It changes whenever one of them does.
func (s *Store) Revision(gvk schema.GroupVersionKind) string {
	if k, ok := (*s.index.Load())[gvk]; ok {
		return k.rev
	}
	return ""
}

// reindex rebuilds the index by kind; s.mu is held.
func (s *Store) reindex() {
	byKind := map[schema.GroupVersionKind][]*compiled{}
	for _, c := range s.byName {
		byKind[c.gvk] = append(byKind[c.gvk], c)
	}
	index := make(map[schema.GroupVersionKind]*kindCustomization, len(byKind))
	for gvk, cs := range byKind {
		slices.SortFunc(cs, func(a, b *compiled) int {
			switch {
			case a.builtin != b.builtin: // built-ins last
				if a.builtin {
					return 1
				}
				return -1
			case a.name < b.name:
				return -1
			case a.name > b.name:
				return 1
			}
			return 0
		})
		k := &kindCustomization{store: s, gvk: gvk}
		h := sha256.New()
		for _, c := range cs {
			fmt.Fprintf(h, "%s\x00%s\x00%t\x00", c.name, c.hash, c.builtin)
			for i, sc := range c.scripts {
				if sc != nil && k.ops[i].script == nil {
					k.ops[i] = binding{c: c, script: sc}
				}
			}
		}
		k.rev = hex.EncodeToString(h.Sum(nil))[:16]
		index[gvk] = k
	}
	s.index.Store(&index)
}

// binding is the script that serves one operation of a kind, and its customization.
type binding struct {
	c      *compiled
	script *script
}

// kindCustomization is the customization of one kind, as Lookup returns it.
type kindCustomization struct {
	store *Store
	gvk   schema.GroupVersionKind
	rev   string
	ops   [numOps]binding
}

var _ interpreter.Customization = (*kindCustomization)(nil)

func (k *kindCustomization) Has(op interpreter.Operation) bool {
	i := opIndex(op)
	return i >= 0 && k.ops[i].script != nil
}

func (k *kindCustomization) Revision() string { return k.rev }

// Serving returns the name of the customization whose script serves op for gvk, "" when
// none does.
func (s *Store) Serving(gvk schema.GroupVersionKind, op interpreter.Operation) string {
	k, ok := (*s.index.Load())[gvk]
	if i := opIndex(op); ok && i >= 0 && k.ops[i].c != nil {
		return k.ops[i].c.name
	}
	return ""
}

// run runs op's script on obj with the call made by fn, in a state of the customization's
// pool. A failure is reported to OnFailure and returned with the customization, the
// operation and the object named.
func (k *kindCustomization) run(op interpreter.Operation, obj *unstructured.Unstructured, fn func(v *vm, s *script) error) error {
	i := opIndex(op)
	if i < 0 || k.ops[i].script == nil {
		return fmt.Errorf("%s is not customized for %s", op, k.gvk)
	}
	b := k.ops[i]
	err := b.c.pool.run(func(v *vm) error {
		if obj == nil {
			return errors.New("no object")
		}
		return fn(v, b.script)
	})
	if err == nil {
		return nil
	}
	desc := describe(obj)
	err = fmt.Errorf("customization %q, %s (%s) of %s: %w", b.c.name, op, b.script.fn, desc, err)
	if f := k.store.onFailure; f != nil {
		f(Failure{Customization: b.c.name, Operation: op, Object: desc, Err: err, Builtin: b.c.builtin})
	}
	return err
}

func describe(obj *unstructured.Unstructured) string {
	if obj == nil {
		return "<nil>"
	}
	name := obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return obj.GetAPIVersion() + "/" + obj.GetKind() + " " + name
}

// pool keeps idle Lua states of one customization for reuse.
type pool struct {
	lim  *limits
	idle chan *vm
}

func newPool(lim *limits) *pool { return &pool{lim: lim, idle: make(chan *vm, lim.idle)} }

// run runs fn in a state of the pool, with a fresh budget; panics become errors, and a state
// that failed is closed rather than reused.
func (p *pool) run(fn func(v *vm) error) (err error) {
	var v *vm
	select {
	case v = <-p.idle:
	default:
		if v, err = newVM(p.lim); err != nil {
			return err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			v.broken = true
			err = fmt.Errorf("internal error running the script: %v", r)
		}
		if v.broken {
			v.close()
			return
		}
		select {
		case p.idle <- v:
		default:
			v.close()
		}
	}()
	v.begin()
	return fn(v)
}

// Declared is the store's customizations applied with Apply (ResourceInterpreterCustomizations),
// without the built-ins: the first layer of the interpreter's precedence (interpreter.Layers).
func (s *Store) Declared() interpreter.Customizations { return view{s: s, builtin: false} }

// Builtins is the store's built-in customizations (ApplyBuiltin), for the operations no
// customization applied with Apply scripts: the layer after the interpreter webhooks.
func (s *Store) Builtins() interpreter.Customizations { return view{s: s, builtin: true} }

// view is the operations of the store served by customizations of one origin.
type view struct {
	s       *Store
	builtin bool
}

func (v view) Lookup(gvk schema.GroupVersionKind) (interpreter.Customization, bool) {
	k, ok := (*v.s.index.Load())[gvk]
	if !ok {
		return nil, false
	}
	kv := kindView{kindCustomization: k, builtin: v.builtin}
	for _, op := range interpreter.Operations {
		if kv.Has(op) {
			return kv, true
		}
	}
	return nil, false
}

// kindView is a kind's customization restricted to the operations of one origin. Its
// revision is the kind's, whatever the origin, so that the layers' revision joins it once.
type kindView struct {
	*kindCustomization
	builtin bool
}

func (k kindView) Has(op interpreter.Operation) bool {
	i := opIndex(op)
	return i >= 0 && k.ops[i].script != nil && k.ops[i].c.builtin == k.builtin
}
