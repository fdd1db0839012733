package customization

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// maxScriptBytes is the API's limit on a script's length, enforced here too.
const maxScriptBytes = 65536

// functionNames are the functions each operation's script defines, as Karmada names them.
var functionNames = map[interpreter.Operation]string{
	interpreter.OperationRetain:              "Retain",
	interpreter.OperationGetReplicas:         "GetReplicas",
	interpreter.OperationReviseReplica:       "ReviseReplica",
	interpreter.OperationReflectStatus:       "ReflectStatus",
	interpreter.OperationAggregateStatus:     "AggregateStatus",
	interpreter.OperationInterpretHealth:     "InterpretHealth",
	interpreter.OperationInterpretDependency: "GetDependencies",
	interpreter.OperationGetComponents:       "GetComponents",
}

// opIndex is the position of op in interpreter.Operations, or -1.
func opIndex(op interpreter.Operation) int {
	for i, o := range interpreter.Operations {
		if o == op {
			return i
		}
	}
	return -1
}

// script is one compiled script.
type script struct {
	op    interpreter.Operation
	fn    string // the function it defines
	proto *lua.FunctionProto
}

// Compile checks a customization's target and scripts without putting it in use: each
// script must parse and define its operation's function (as a global: function
// GetReplicas(obj) ... end). Errors name the operation and the line.
func Compile(spec configv1alpha1.ResourceInterpreterCustomizationSpec) error {
	_, _, err := compileSpec(spec)
	return err
}

// compileSpec compiles every script of spec, by operation index; the hash covers the target
// and the scripts.
func compileSpec(spec configv1alpha1.ResourceInterpreterCustomizationSpec) (scripts [numOps]*script, hash string, err error) {
	var errs []error
	if _, err := target(spec.Target); err != nil {
		errs = append(errs, err)
	}
	sources := scriptsOf(spec.Customizations)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", spec.Target.APIVersion, spec.Target.Kind)
	n := 0
	for i, op := range interpreter.Operations {
		src, ok := sources[op]
		if !ok {
			h.Write([]byte{0})
			continue
		}
		n++
		fmt.Fprintf(h, "\x01%d\x00%s", len(src), src)
		s, err := compileScript(op, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", op, err))
			continue
		}
		scripts[i] = s
	}
	if n == 0 {
		errs = append(errs, errors.New("customizations: no script is set"))
	}
	if err := errors.Join(errs...); err != nil {
		return scripts, "", err
	}
	return scripts, hex.EncodeToString(h.Sum(nil)), nil
}

func target(t configv1alpha1.CustomizationTarget) (schema.GroupVersionKind, error) {
	if t.APIVersion == "" || t.Kind == "" {
		return schema.GroupVersionKind{}, errors.New("target: apiVersion and kind are required")
	}
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("target: %w", err)
	}
	return gv.WithKind(t.Kind), nil
}

// scriptsOf lists the scripts that are set, by operation.
func scriptsOf(r configv1alpha1.CustomizationRules) map[interpreter.Operation]string {
	out := map[interpreter.Operation]string{}
	if r.Retention != nil {
		out[interpreter.OperationRetain] = r.Retention.LuaScript
	}
	if r.ReplicaResource != nil {
		out[interpreter.OperationGetReplicas] = r.ReplicaResource.LuaScript
	}
	if r.ReplicaRevision != nil {
		out[interpreter.OperationReviseReplica] = r.ReplicaRevision.LuaScript
	}
	if r.StatusReflection != nil {
		out[interpreter.OperationReflectStatus] = r.StatusReflection.LuaScript
	}
	if r.StatusAggregation != nil {
		out[interpreter.OperationAggregateStatus] = r.StatusAggregation.LuaScript
	}
	if r.HealthInterpretation != nil {
		out[interpreter.OperationInterpretHealth] = r.HealthInterpretation.LuaScript
	}
	if r.DependencyInterpretation != nil {
		out[interpreter.OperationInterpretDependency] = r.DependencyInterpretation.LuaScript
	}
	if r.ComponentResource != nil {
		out[interpreter.OperationGetComponents] = r.ComponentResource.LuaScript
	}
	return out
}

// compileScript parses src, checks that it defines op's function, rewrites it (rewrite.go)
// and compiles it.
func compileScript(op interpreter.Operation, src string) (s *script, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("the script cannot be compiled: %v", r)
		}
	}()
	fn := functionNames[op]
	if len(src) > maxScriptBytes {
		return nil, fmt.Errorf("the script is %d bytes long, above the limit of %d", len(src), maxScriptBytes)
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("the script is empty")
	}
	chunk, err := parse.Parse(strings.NewReader(src), chunkName)
	if err != nil {
		return nil, syntaxError(err)
	}
	if chunk == nil {
		return nil, errors.New("syntax error")
	}
	if !defines(chunk, fn) {
		return nil, fmt.Errorf("the script does not define function %s (as a global: function %s(...) ... end)", fn, fn)
	}
	proto, err := lua.Compile(rewriteChunk(chunk), chunkName)
	if err != nil {
		var cerr *lua.CompileError
		if errors.As(err, &cerr) {
			return nil, fmt.Errorf("line %d: %s", cerr.Line, cerr.Message)
		}
		return nil, err
	}
	noArgTables(proto)
	return &script{op: op, fn: fn, proto: proto}, nil
}

// noArgTables turns off Lua 5.0's arg table, which gopher-lua makes on every call of a
// vararg function that does not use ...: a table of all the arguments, made where the
// budget cannot see it. Such functions see arg as nil; ... works as ever.
func noArgTables(p *lua.FunctionProto) {
	p.IsVarArg &^= lua.VarArgNeedsArg
	for _, c := range p.FunctionPrototypes {
		noArgTables(c)
	}
}

func syntaxError(err error) error {
	var perr *parse.Error
	if errors.As(err, &perr) {
		if perr.Pos.Line == parse.EOF {
			return fmt.Errorf("at the end of the script: %s", strings.TrimSpace(perr.Message))
		}
		return fmt.Errorf("line %d (column %d) near '%s': %s", perr.Pos.Line, perr.Pos.Column, perr.Token, strings.TrimSpace(perr.Message))
	}
	return errors.New(luaMessage(strings.TrimSpace(err.Error())))
}

// defines reports whether the chunk defines the global function fn at its top level.
func defines(chunk []ast.Stmt, fn string) bool {
	for _, s := range chunk {
		switch st := s.(type) {
		case *ast.FuncDefStmt:
			if id, ok := st.Name.Func.(*ast.IdentExpr); ok && id.Value == fn {
				return true
			}
		case *ast.AssignStmt:
			for i, l := range st.Lhs {
				if id, ok := l.(*ast.IdentExpr); ok && id.Value == fn && i < len(st.Rhs) {
					return true
				}
			}
		}
	}
	return false
}
