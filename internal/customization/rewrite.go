package customization

import (
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// Scripts are rewritten before they are compiled, so that everything that makes a script's
// memory grow goes through a Go function that charges it to the call's budget:
//
//   - a .. b .. c          becomes $concat(a, b, c)      (checks the string limit)
//   - t[k] = v, t.f = v    becomes $set(t, k, v)         (charges a new field, and the nils
//     gopher-lua puts in a list's array part up to the index)
//   - {...}                becomes $table({...})          (charges the table; fields with
//     computed or numeric keys are passed after it and set through $set, so that a
//     constructor such as {[1e7] = x} cannot allocate millions of slots at once)
//   - function ... end     becomes $func(function ... end) (charges the closure)
//
// The $ names cannot be written in Lua, so scripts can neither shadow nor reach them: they
// are locals of the chunk, given to it as its arguments (local $concat, ... = ...), and
// upvalues of the functions that use them. Assignments to several targets at once keep
// Lua's order: the tables and keys, then the values, are evaluated before any is assigned.
// Fields with computed keys in a constructor are set after its other fields.
const (
	helperConcat = "$concat"
	helperSet    = "$set"
	helperTable  = "$table"
	helperFunc   = "$func"
)

func rewriteChunk(chunk []ast.Stmt) []ast.Stmt {
	prologue := &ast.LocalAssignStmt{
		Names: []string{helperConcat, helperSet, helperTable, helperFunc},
		Exprs: []ast.Expr{&ast.Comma3Expr{}},
	}
	return append([]ast.Stmt{prologue}, block(chunk)...)
}

func block(stmts []ast.Stmt) []ast.Stmt {
	out := make([]ast.Stmt, 0, len(stmts))
	for _, s := range stmts {
		out = append(out, stmt(s)...)
	}
	return out
}

func stmt(s ast.Stmt) []ast.Stmt {
	switch st := s.(type) {
	case *ast.AssignStmt:
		return assign(st)
	case *ast.LocalAssignStmt:
		if len(st.Names) == 1 && len(st.Exprs) == 1 {
			if fe, ok := st.Exprs[0].(*ast.FunctionExpr); ok {
				// local function f (and gopher-lua's local f = function): f is in scope in
				// its own body.
				decl := &ast.LocalAssignStmt{Names: st.Names, Exprs: []ast.Expr{}}
				lines(decl, st)
				set := &ast.AssignStmt{Lhs: []ast.Expr{ident(st.Names[0], st)}, Rhs: []ast.Expr{function(fe)}}
				lines(set, st)
				return []ast.Stmt{decl, set}
			}
		}
		st.Exprs = exprs(st.Exprs)
	case *ast.FuncCallStmt:
		st.Expr = expr(st.Expr)
	case *ast.DoBlockStmt:
		st.Stmts = block(st.Stmts)
	case *ast.WhileStmt:
		st.Condition = expr(st.Condition)
		st.Stmts = block(st.Stmts)
	case *ast.RepeatStmt:
		st.Condition = expr(st.Condition)
		st.Stmts = block(st.Stmts)
	case *ast.IfStmt:
		st.Condition = expr(st.Condition)
		st.Then = block(st.Then)
		st.Else = block(st.Else)
	case *ast.NumberForStmt:
		st.Init = expr(st.Init)
		st.Limit = expr(st.Limit)
		if st.Step != nil {
			st.Step = expr(st.Step)
		}
		st.Stmts = block(st.Stmts)
	case *ast.GenericForStmt:
		st.Exprs = exprs(st.Exprs)
		st.Stmts = block(st.Stmts)
	case *ast.FuncDefStmt:
		fe := st.Func
		var target ast.Expr
		if st.Name.Func == nil { // function recv:method(...): self comes first
			params := &ast.ParList{HasVargs: fe.ParList.HasVargs, Names: append([]string{"self"}, fe.ParList.Names...)}
			method := &ast.FunctionExpr{ParList: params, Stmts: fe.Stmts}
			lines(method, fe)
			fe = method
			key := &ast.StringExpr{Value: st.Name.Method}
			lines(key, st)
			get := &ast.AttrGetExpr{Object: st.Name.Receiver, Key: key}
			lines(get, st)
			target = get
		} else {
			target = st.Name.Func
		}
		as := &ast.AssignStmt{Lhs: []ast.Expr{target}, Rhs: []ast.Expr{fe}}
		lines(as, st)
		return assign(as)
	case *ast.ReturnStmt:
		st.Exprs = exprs(st.Exprs)
	}
	return []ast.Stmt{s}
}

// assign rewrites an assignment: fields through $set, values rewritten.
func assign(st *ast.AssignStmt) []ast.Stmt {
	rhs := exprs(st.Rhs)
	fields := false
	for _, l := range st.Lhs {
		if _, ok := l.(*ast.AttrGetExpr); ok {
			fields = true
		}
	}
	if !fields {
		st.Rhs = rhs
		return []ast.Stmt{st}
	}
	if len(st.Lhs) == 1 && len(rhs) == 1 {
		a := st.Lhs[0].(*ast.AttrGetExpr)
		return []ast.Stmt{callStmt(st, helperSet, expr(a.Object), expr(a.Key), single(rhs[0]))}
	}
	// do local $t1, $k1, ... = <tables and keys>; local $v1, ... = <values>; <assign> end
	var refs []string
	var refExprs []ast.Expr
	vals := make([]string, len(st.Lhs))
	for i, l := range st.Lhs {
		n := strconv.Itoa(i + 1)
		vals[i] = "$v" + n
		if a, ok := l.(*ast.AttrGetExpr); ok {
			refs = append(refs, "$t"+n, "$k"+n)
			refExprs = append(refExprs, expr(a.Object), expr(a.Key))
		}
	}
	var body []ast.Stmt
	if len(refs) > 0 {
		decl := &ast.LocalAssignStmt{Names: refs, Exprs: refExprs}
		lines(decl, st)
		body = append(body, decl)
	}
	decl := &ast.LocalAssignStmt{Names: vals, Exprs: rhs}
	lines(decl, st)
	body = append(body, decl)
	for i, l := range st.Lhs {
		n := strconv.Itoa(i + 1)
		if _, ok := l.(*ast.AttrGetExpr); ok {
			body = append(body, callStmt(st, helperSet, ident("$t"+n, st), ident("$k"+n, st), ident(vals[i], st)))
			continue
		}
		as := &ast.AssignStmt{Lhs: []ast.Expr{l}, Rhs: []ast.Expr{ident(vals[i], st)}}
		lines(as, st)
		body = append(body, as)
	}
	do := &ast.DoBlockStmt{Stmts: body}
	lines(do, st)
	return []ast.Stmt{do}
}

func exprs(es []ast.Expr) []ast.Expr {
	for i, e := range es {
		es[i] = expr(e)
	}
	return es
}

func expr(e ast.Expr) ast.Expr {
	switch ex := e.(type) {
	case *ast.StringConcatOpExpr:
		var operands []ast.Expr
		flattenConcat(ex, &operands)
		return call(ex, helperConcat, operands...)
	case *ast.TableExpr:
		var keep []*ast.Field
		var moved []ast.Expr
		for _, f := range ex.Fields {
			f.Value = expr(f.Value)
			if f.Key == nil {
				keep = append(keep, f)
				continue
			}
			if _, ok := f.Key.(*ast.StringExpr); ok {
				keep = append(keep, f)
				continue
			}
			moved = append(moved, expr(f.Key), single(f.Value))
		}
		ex.Fields = keep
		return call(ex, helperTable, append([]ast.Expr{ex}, moved...)...)
	case *ast.FunctionExpr:
		return function(ex)
	case *ast.AttrGetExpr:
		ex.Object = expr(ex.Object)
		ex.Key = expr(ex.Key)
	case *ast.FuncCallExpr:
		if ex.Func != nil {
			ex.Func = expr(ex.Func)
		}
		if ex.Receiver != nil {
			ex.Receiver = expr(ex.Receiver)
		}
		ex.Args = exprs(ex.Args)
	case *ast.LogicalOpExpr:
		ex.Lhs, ex.Rhs = expr(ex.Lhs), expr(ex.Rhs)
	case *ast.RelationalOpExpr:
		ex.Lhs, ex.Rhs = expr(ex.Lhs), expr(ex.Rhs)
	case *ast.ArithmeticOpExpr:
		ex.Lhs, ex.Rhs = expr(ex.Lhs), expr(ex.Rhs)
	case *ast.UnaryMinusOpExpr:
		ex.Expr = expr(ex.Expr)
	case *ast.UnaryNotOpExpr:
		ex.Expr = expr(ex.Expr)
	case *ast.UnaryLenOpExpr:
		ex.Expr = expr(ex.Expr)
	}
	return e
}

func flattenConcat(e ast.Expr, out *[]ast.Expr) {
	if c, ok := e.(*ast.StringConcatOpExpr); ok {
		flattenConcat(c.Lhs, out)
		flattenConcat(c.Rhs, out)
		return
	}
	*out = append(*out, expr(e))
}

func function(fe *ast.FunctionExpr) ast.Expr {
	fe.Stmts = block(fe.Stmts)
	return call(fe, helperFunc, fe)
}

// single truncates a call or ... to its first value, as (f()) does, where it is passed on as
// one argument among others.
func single(e ast.Expr) ast.Expr {
	switch ex := e.(type) {
	case *ast.FuncCallExpr:
		ex.AdjustRet = true
	case *ast.Comma3Expr:
		ex.AdjustRet = true
	}
	return e
}

func call(at ast.PositionHolder, name string, args ...ast.Expr) *ast.FuncCallExpr {
	c := &ast.FuncCallExpr{Func: ident(name, at), Args: args}
	lines(c, at)
	return c
}

func callStmt(at ast.PositionHolder, name string, args ...ast.Expr) *ast.FuncCallStmt {
	s := &ast.FuncCallStmt{Expr: call(at, name, args...)}
	lines(s, at)
	return s
}

func ident(name string, at ast.PositionHolder) *ast.IdentExpr {
	id := &ast.IdentExpr{Value: name}
	lines(id, at)
	return id
}

func lines(n, at ast.PositionHolder) {
	n.SetLine(at.Line())
	n.SetLastLine(at.LastLine())
}
