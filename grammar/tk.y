/* tk.y - the grammar of the .tk tile language (pure, reentrant, with locations).
 * It builds the AST of ast.h and nothing else: names, types and shapes are sema's business.
 * Error productions resynchronise at ';' so one run reports several syntax errors. */
%define api.pure full
%define api.prefix {tk_yy}
%define api.location.type {Span}
%define parse.error custom
%locations
%expect 0
%param {void *scanner}
%parse-param {ParseCtx *pc}

%code requires {
#include "parse.h"
typedef struct ExprList { Expr **v; int n, cap; } ExprList;
typedef struct IndexList { IndexArg *v; int n, cap; } IndexList;
typedef struct AxisList { Axis *v; int n, cap; } AxisList;
typedef struct DeclList { Decl *v; int n, cap; } DeclList;
typedef struct ArgList { Arg *v; int n, cap; } ArgList;
typedef struct KItemList { KItem **v; int n, cap; } KItemList;
typedef struct AttrList { const char **v; Span *spans; int n, cap; } AttrList;
}

%code provides {
int tk_yylex(TK_YYSTYPE *lval, Span *lloc, void *scanner);
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                                            \
    do {                                                                                       \
        if (N) {                                                                               \
            (Cur).file = YYRHSLOC(Rhs, 1).file;                                                \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;                                              \
            (Cur).end = YYRHSLOC(Rhs, N).end;                                                  \
        } else {                                                                               \
            (Cur).file = YYRHSLOC(Rhs, 0).file;                                                \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end;                                    \
        }                                                                                      \
    } while (0)
}

%code {
#include <string.h>

#define A (pc->arena)

/* `type NAME = DTYPE;`: NAME stands for the dtype from here on (-D NAME=DTYPE overrides it) */
static void declare_type(ParseCtx *pc, const char *name, Span sp, DType dt) {
    Program *p = pc->prog;
    /* every later use of the name reads as the dtype: a builtin or an intrinsic would change meaning */
    for (int i = 0; i < BI_COUNT; i++)
        if (!strcmp(name, builtin_name[i])) {
            diag_error(pc->diag, sp, "'%s' is a builtin name: a type needs a name of its own", name);
            return;
        }
    for (int i = 0; i < FN_COUNT; i++)
        if (!strcmp(name, intrinsic_name[i])) {
            diag_error(pc->diag, sp, "'%s' is an intrinsic: a type needs a name of its own (calls to '%s' would read as "
                       "conversions)", name, name);
            return;
        }
    for (int i = 0; i < p->params.n; i++)
        if (!strcmp(p->params.v[i]->name, name)) {
            diag_error(pc->diag, sp, "'%s' is a param already: a type needs a name of its own", name);
            diag_note(pc->diag, p->params.v[i]->span, "the param is declared here");
            return;
        }
    TypeAlias *t = ARENA_NEW(A, TypeAlias);
    t->name = name;
    t->span = sp;
    t->dt = dt;
    for (int i = 0; i < p->ntype_defines; i++)
        if (!strcmp(p->type_defines[i].name, name)) {
            t->dt = p->type_defines[i].dt;
            t->overridden = true;
            p->type_defines[i].used = true;
        }
    vec_push(A, &p->types, t);
}

static Expr *mk_bin(ParseCtx *pc, BinOp op, Expr *l, Expr *r, Span s, Span ops) {
    Expr *e = ast_expr(A, EX_BINARY, s);
    e->u.bin.op = op;
    e->u.bin.l = l;
    e->u.bin.r = r;
    e->u.bin.op_span = ops;
    return e;
}

static Expr *mk_un(ParseCtx *pc, UnOp op, Expr *x, Span s) {
    Expr *e = ast_expr(A, EX_UNARY, s);
    e->u.un.op = op;
    e->u.un.e = x;
    return e;
}

static Stmt *mk_assign(ParseCtx *pc, Expr *l, AssignOp op, Span ops, Expr *r, Span s) {
    Stmt *st = ast_stmt(A, ST_ASSIGN, s);
    st->u.assign.lhs = l;
    st->u.assign.op = op;
    st->u.assign.op_span = ops;
    st->u.assign.rhs = r;
    return st;
}

static KItem *mk_decls(ParseCtx *pc, MemSpace sp, DeclList *l, KItemList *out) {
    for (int i = 0; i < l->n; i++) {
        KItem *it = ast_kitem(A, KI_DECL, l->v[i].span);
        Decl *d = ARENA_NEW(A, Decl);
        *d = l->v[i];
        d->space = sp;
        it->u.decl.d = d;
        vec_push(A, out, it);
    }
    return NULL;
}

static void yyerror(Span *loc, void *scanner, ParseCtx *pc, const char *msg) {
    (void)scanner;
    diag_error(pc->diag, *loc, "%s", msg);
}
}

%union {
    int64_t ival;
    double fval;
    const char *str;
    DType dtype;
    Expr *expr;
    Stmt *stmt;
    StmtList *stmts;
    ExprList *exprs;
    IndexArg iarg;
    IndexList *iargs;
    Axis axis;
    AxisList *axes;
    Option opt;
    OptionList *opts;
    Decl decl;
    DeclList *decls;
    TypeSpec tspec;
    AttrList *attrs;
    Arg arg;
    ArgList *args;
    ArgMode mode;
    KItemList *kitems;
    BlockKind bkind;
    AssignOp aop;
}

%token KERNEL "kernel" PARAM "param" IMPORT "import" IN "in" OUT "out" INOUT "inout"
%token SHARED "shared" REG "reg" GRID "grid" PIPELINE "pipeline" LET "let" REQUIRE "require"
%token SETUP "setup" LOAD "load" COMPUTE "compute" STORE "store" FINISH "finish"
%token IF "if" ELSE "else" FOR "for" GRAD "grad" TYPE "type" DISPATCH "dispatch" ENTRY "entry" SCRATCH "scratch" DEF "def"
%token ARROW "<-" DOTDOT ".." PLUSEQ "+=" MINUSEQ "-=" STAREQ "*=" SLASHEQ "/="
%token EQEQ "==" NOTEQ "!=" LESSEQ "<=" GREATEREQ ">=" ANDAND "&&" OROR "||"
%token <ival> INT "integer"
%token <fval> FLOAT "number"
%token <str> IDENT "identifier" STRING "string"
%token <dtype> DTYPE "dtype"

%type <expr> expr postfix primary kernel_cond_opt
%type <exprs> expr_list expr_list_opt
%type <iarg> index_arg
%type <iargs> index_args
%type <stmt> stmt if_stmt
%type <stmts> stmts block_body
%type <axis> axis
%type <axes> axes
%type <opt> opt
%type <opts> opts
%type <decl> decl
%type <decls> decls
%type <tspec> type
%type <attrs> attrs
%type <arg> arg
%type <args> args args_opt
%type <mode> mode
%type <kitems> kitems
%type <bkind> block_kind
%type <aop> assign_op

%right '?' ':'
%left OROR
%left ANDAND
%left EQEQ NOTEQ
%left '<' '>' LESSEQ GREATEREQ
%left '+' '-'
%left '*' '/' '%' '@'
%precedence UNARY

%%

program
    : %empty
    | program top_item
    ;

top_item
    : PARAM param_list ';'
    | IMPORT STRING ';' {
          Span s = @2;
          parse_file(A, pc->diag, pc->prog, $2, s, pc->depth + 1);
      }
    | TYPE IDENT '=' DTYPE ';' { declare_type(pc, $2, @2, $4); }
    | DISPATCH STRING ';' { parse_dispatch(pc, $2, @2); }
    | TYPE DTYPE '=' DTYPE ';' {
          Span s = @2;
          diag_error(pc->diag, s, "'%.*s' is a type already: a type name is declared once, and the element types "
                     "(bf16, fp16, fp32, ...) are not names to declare", (int)(s.end - s.begin), pc->text + s.begin);
      }
    | DEF IDENT '(' expr_list_opt ')' '=' expr ';' {
          FnDef *f = ARENA_NEW(A, FnDef);
          f->name = $2;
          f->span = @$;
          f->name_span = @2;
          f->nparams = $4->n;
          f->params = ARENA_NEW_N(A, const char *, $4->n > 0 ? $4->n : 1);
          f->param_spans = ARENA_NEW_N(A, Span, $4->n > 0 ? $4->n : 1);
          for (int i = 0; i < $4->n; i++) {
              const Expr *p = $4->v[i];
              f->param_spans[i] = p->span;
              if (p->kind == EX_NAME) f->params[i] = p->u.name;
              else {
                  diag_error(pc->diag, p->span, "a def's parameters are names: def %s(x, y) = expression;", $2);
                  f->params[i] = "";
              }
          }
          f->body = $7;
          vec_push(A, &pc->prog->defs, f);
      }
    | GRAD IDENT '=' expr_list ';' {
          GradDecl *g = ARENA_NEW(A, GradDecl);
          g->fwd = $2;
          g->span = @$;
          g->fwd_span = @2;
          g->chain = $4->v;
          g->nchain = $4->n;
          vec_push(A, &pc->prog->grads, g);
      }
    | KERNEL IDENT '(' args_opt ')' kernel_cond_opt '{' kitems '}' {
          Kernel *k = ARENA_NEW(A, Kernel);
          k->name = $2;
          k->span = @$;
          k->name_span = @2;
          k->args = $4->v;
          k->nargs = $4->n;
          k->when = $6;
          k->items = $8->v;
          k->nitems = $8->n;
          vec_push(A, &pc->prog->kernels, k);
      }
    | ENTRY IDENT '(' args_opt ')' block_body {
          Kernel *k = ARENA_NEW(A, Kernel);
          k->name = $2;
          k->span = @$;
          k->name_span = @2;
          k->args = $4->v;
          k->nargs = $4->n;
          k->entry = true;
          k->body = *$6;
          vec_push(A, &pc->prog->entries, k);
      }
    | error ';'
    | error '}'
    ;

param_list
    : param_one
    | param_list ',' param_one
    ;

param_one
    : IDENT '=' expr {
          Param *p = ARENA_NEW(A, Param);
          p->name = $1;
          p->span = @1;
          p->value = $3;
          vec_push(A, &pc->prog->params, p);
      }
    ;

/* `if (COND)` after a kernel's arguments: compiled only where the params make COND hold */
kernel_cond_opt
    : %empty { $$ = NULL; }
    | IF '(' expr ')' { $$ = $3; }
    ;

args_opt
    : %empty { $$ = ARENA_NEW(A, ArgList); }
    | args
    ;

args
    : arg { $$ = ARENA_NEW(A, ArgList); vec_push(A, $$, $1); }
    | args ',' arg { $$ = $1; vec_push(A, $$, $3); }
    ;

arg
    : mode IDENT ':' type {
          memset(&$$, 0, sizeof $$);
          $$.mode = $1;
          $$.name = $2;
          $$.span = @2;
          $$.ts = $4;
      }
    ;

mode
    : IN { $$ = ARG_IN; }
    | OUT { $$ = ARG_OUT; }
    | INOUT { $$ = ARG_INOUT; }
    ;

type
    : DTYPE {
          memset(&$$, 0, sizeof $$);
          $$.dt = $1;
          $$.span = @1;
      }
    | DTYPE '[' expr_list ']' attrs {
          memset(&$$, 0, sizeof $$);
          $$.dt = $1;
          $$.span = @$;
          $$.dims = $3->v;
          $$.ndims = $3->n;
          $$.attrs = $5->v;
          $$.attr_spans = $5->spans;
          $$.nattrs = $5->n;
      }
    ;

attrs
    : %empty { $$ = ARENA_NEW(A, AttrList); }
    | attrs IDENT {
          $$ = $1;
          if ($$->n == $$->cap) {
              int cap = $$->cap ? 2 * $$->cap : 4;
              const char **v = ARENA_NEW_N(A, const char *, cap);
              Span *sp = ARENA_NEW_N(A, Span, cap);
              for (int i = 0; i < $$->n; i++) { v[i] = $$->v[i]; sp[i] = $$->spans[i]; }
              $$->v = v;
              $$->spans = sp;
              $$->cap = cap;
          }
          $$->v[$$->n] = $2;
          $$->spans[$$->n++] = @2;
      }
    ;

kitems
    : %empty { $$ = ARENA_NEW(A, KItemList); }
    | kitems GRID '(' axes ')' opts ';' {
          $$ = $1;
          KItem *it = ast_kitem(A, KI_GRID, @2);
          it->u.grid.axes = $4->v;
          it->u.grid.naxes = $4->n;
          it->u.grid.opts = *$6;
          vec_push(A, $$, it);
      }
    | kitems PIPELINE '(' IDENT ':' expr ')' opts ';' {
          $$ = $1;
          KItem *it = ast_kitem(A, KI_PIPELINE, @2);
          it->u.pipe.var = $4;
          it->u.pipe.var_span = @4;
          it->u.pipe.trips = $6;
          it->u.pipe.opts = *$8;
          vec_push(A, $$, it);
      }
    | kitems SHARED decls ';' { $$ = $1; mk_decls(pc, MS_SHARED, $3, $$); }
    | kitems REG decls ';' { $$ = $1; mk_decls(pc, MS_REG, $3, $$); }
    | kitems LET IDENT '=' expr ';' {
          $$ = $1;
          KItem *it = ast_kitem(A, KI_LET, @3);
          it->u.let.name = $3;
          it->u.let.name_span = @3;
          it->u.let.e = $5;
          vec_push(A, $$, it);
      }
    | kitems REQUIRE expr ';' {
          $$ = $1;
          KItem *it = ast_kitem(A, KI_REQUIRE, @3);
          it->u.require.cond = $3;
          vec_push(A, $$, it);
      }
    | kitems block_kind block_body {
          $$ = $1;
          KItem *it = ast_kitem(A, KI_BLOCK, @2);
          it->u.block.kind = $2;
          it->u.block.body = *$3;
          it->u.block.open = @3;
          vec_push(A, $$, it);
      }
    | kitems error ';' { $$ = $1; }
    ;

block_kind
    : SETUP { $$ = BK_SETUP; }
    | LOAD { $$ = BK_LOAD; }
    | COMPUTE { $$ = BK_COMPUTE; }
    | STORE { $$ = BK_STORE; }
    | FINISH { $$ = BK_FINISH; }
    ;

axes
    : axis { $$ = ARENA_NEW(A, AxisList); vec_push(A, $$, $1); }
    | axes ',' axis { $$ = $1; vec_push(A, $$, $3); }
    ;

axis
    : IDENT ':' expr {
          memset(&$$, 0, sizeof $$);
          $$.name = $1;
          $$.span = @1;
          $$.extent = $3;
      }
    | IDENT ':' expr IDENT {
          memset(&$$, 0, sizeof $$);
          $$.name = $1;
          $$.span = @1;
          $$.extent = $3;
          $$.mod_span = @4;
          if (!strcmp($4, "reversed")) $$.reversed = true;
          else if (!strcmp($4, "folded")) $$.folded = true;
          else diag_error(pc->diag, @4, "expected 'reversed', 'folded' or ',' after the axis extent, found '%s'", $4);
      }
    ;

opts
    : %empty { $$ = ARENA_NEW(A, OptionList); }
    | opts ',' opt { $$ = $1; vec_push(A, $$, $3); }
    ;

opt
    : IDENT {
          memset(&$$, 0, sizeof $$);
          $$.key = $1;
          $$.key_span = @1;
          $$.span = @$;
      }
    | IDENT '=' expr {
          memset(&$$, 0, sizeof $$);
          $$.key = $1;
          $$.key_span = @1;
          $$.value = $3;
          $$.span = @$;
      }
    ;

decls
    : decl { $$ = ARENA_NEW(A, DeclList); vec_push(A, $$, $1); }
    | decls ',' decl { $$ = $1; vec_push(A, $$, $3); }
    ;

decl
    : IDENT ':' type {
          memset(&$$, 0, sizeof $$);
          $$.name = $1;
          $$.span = @1;
          $$.ts = $3;
      }
    ;

block_body
    : '{' stmts '}' { $$ = $2; }
    ;

stmts
    : %empty { $$ = ARENA_NEW(A, StmtList); }
    | stmts stmt { $$ = $1; if ($2) vec_push(A, $$, $2); }
    ;

stmt
    : expr assign_op expr ';' { $$ = mk_assign(pc, $1, $2, @2, $3, @$); }
    | LET IDENT '=' expr ';' {
          $$ = ast_stmt(A, ST_LET, @$);
          $$->u.let.name = $2;
          $$->u.let.name_span = @2;
          $$->u.let.e = $4;
      }
    | expr ';' {
          $$ = ast_stmt(A, ST_EXPR, @$);
          $$->u.expr.e = $1;
      }
    | SCRATCH IDENT ':' type ';' {
          $$ = ast_stmt(A, ST_SCRATCH, @$);
          $$->u.scratch.name = $2;
          $$->u.scratch.name_span = @2;
          $$->u.scratch.ts = ARENA_NEW(A, TypeSpec);
          *$$->u.scratch.ts = $4;
      }
    | if_stmt
    | FOR IDENT IN expr DOTDOT expr block_body {
          $$ = ast_stmt(A, ST_FOR, @$);
          $$->u.for_.var = $2;
          $$->u.for_.var_span = @2;
          $$->u.for_.lo = $4;
          $$->u.for_.hi = $6;
          $$->u.for_.body = *$7;
      }
    | error ';' { $$ = NULL; }
    ;

if_stmt
    : IF '(' expr ')' block_body {
          $$ = ast_stmt(A, ST_IF, @$);
          $$->u.if_.cond = $3;
          $$->u.if_.then_s = *$5;
      }
    | IF '(' expr ')' block_body ELSE block_body {
          $$ = ast_stmt(A, ST_IF, @$);
          $$->u.if_.cond = $3;
          $$->u.if_.then_s = *$5;
          $$->u.if_.else_s = *$7;
          $$->u.if_.has_else = true;
      }
    | IF '(' expr ')' block_body ELSE if_stmt {
          $$ = ast_stmt(A, ST_IF, @$);
          $$->u.if_.cond = $3;
          $$->u.if_.then_s = *$5;
          StmtList *el = ARENA_NEW(A, StmtList);
          vec_push(A, el, $7);
          $$->u.if_.else_s = *el;
          $$->u.if_.has_else = true;
      }
    ;

assign_op
    : '=' { $$ = AS_SET; }
    | PLUSEQ { $$ = AS_ADD; }
    | MINUSEQ { $$ = AS_SUB; }
    | STAREQ { $$ = AS_MUL; }
    | SLASHEQ { $$ = AS_DIV; }
    | ARROW { $$ = AS_MOVE; }
    ;

expr
    : postfix
    | expr OROR expr { $$ = mk_bin(pc, BIN_OR, $1, $3, @$, @2); }
    | expr ANDAND expr { $$ = mk_bin(pc, BIN_AND, $1, $3, @$, @2); }
    | expr EQEQ expr { $$ = mk_bin(pc, BIN_EQ, $1, $3, @$, @2); }
    | expr NOTEQ expr { $$ = mk_bin(pc, BIN_NE, $1, $3, @$, @2); }
    | expr '<' expr { $$ = mk_bin(pc, BIN_LT, $1, $3, @$, @2); }
    | expr LESSEQ expr { $$ = mk_bin(pc, BIN_LE, $1, $3, @$, @2); }
    | expr '>' expr { $$ = mk_bin(pc, BIN_GT, $1, $3, @$, @2); }
    | expr GREATEREQ expr { $$ = mk_bin(pc, BIN_GE, $1, $3, @$, @2); }
    | expr '+' expr { $$ = mk_bin(pc, BIN_ADD, $1, $3, @$, @2); }
    | expr '-' expr { $$ = mk_bin(pc, BIN_SUB, $1, $3, @$, @2); }
    | expr '*' expr { $$ = mk_bin(pc, BIN_MUL, $1, $3, @$, @2); }
    | expr '/' expr { $$ = mk_bin(pc, BIN_DIV, $1, $3, @$, @2); }
    | expr '%' expr { $$ = mk_bin(pc, BIN_MOD, $1, $3, @$, @2); }
    | expr '@' expr { $$ = mk_bin(pc, BIN_MATMUL, $1, $3, @$, @2); }
    | '-' expr %prec UNARY { $$ = mk_un(pc, UN_NEG, $2, @$); }
    | '!' expr %prec UNARY { $$ = mk_un(pc, UN_NOT, $2, @$); }
    | expr '?' expr ':' expr {
          $$ = ast_expr(A, EX_COND, @$);
          $$->u.cond.c = $1;
          $$->u.cond.a = $3;
          $$->u.cond.b = $5;
      }
    ;

postfix
    : primary
    | postfix '.' IDENT {
          if (!strcmp($3, "T")) {
              $$ = ast_expr(A, EX_TRANSPOSE, @$);
              $$->u.tr.base = $1;
          } else {
              $$ = ast_expr(A, EX_MEMBER, @$);
              $$->u.member.base = $1;
              $$->u.member.field = $3;
              $$->u.member.field_span = @3;
          }
      }
    | postfix '[' index_args ']' {
          $$ = ast_expr(A, EX_INDEX, @$);
          $$->u.index.base = $1;
          $$->u.index.args = $3->v;
          $$->u.index.nargs = $3->n;
      }
    ;

primary
    : INT { $$ = ast_expr(A, EX_INT, @$); $$->u.ival = $1; }
    | FLOAT { $$ = ast_expr(A, EX_FLOAT, @$); $$->u.fval = $1; }
    | IDENT { $$ = ast_expr(A, EX_NAME, @$); $$->u.name = $1; }
    | IDENT '(' expr_list_opt ')' {
          $$ = ast_expr(A, EX_CALL, @$);
          $$->u.call.fn = $1;
          $$->u.call.fn_span = @1;
          $$->u.call.args = $3->v;
          $$->u.call.nargs = $3->n;
      }
    | DTYPE '(' expr_list_opt ')' {
          $$ = ast_expr(A, EX_CALL, @$);
          $$->u.call.fn = dtype_name[$1];
          {   /* written with a `type` name: the plan and the CUDA's comments show it as written */
              Span t = @1;
              size_t n = t.end - t.begin;
              if (strlen($$->u.call.fn) != n || strncmp($$->u.call.fn, pc->text + t.begin, n))
                  $$->u.call.spelled = arena_strndup(A, pc->text + t.begin, n);
          }
          $$->u.call.fn_span = @1;
          $$->u.call.args = $3->v;
          $$->u.call.nargs = $3->n;
      }
    | '(' expr ')' { $$ = $2; $$->span = @$; }
    ;

expr_list_opt
    : %empty { $$ = ARENA_NEW(A, ExprList); }
    | expr_list
    ;

expr_list
    : expr { $$ = ARENA_NEW(A, ExprList); vec_push(A, $$, $1); }
    | expr_list ',' expr { $$ = $1; vec_push(A, $$, $3); }
    ;

index_args
    : index_arg { $$ = ARENA_NEW(A, IndexList); vec_push(A, $$, $1); }
    | index_args ',' index_arg { $$ = $1; vec_push(A, $$, $3); }
    ;

index_arg
    : expr { $$ = (IndexArg){.span = @$, .lo = $1}; }
    | ':' { $$ = (IndexArg){.span = @$, .slice = true}; }
    | expr ':' { $$ = (IndexArg){.span = @$, .slice = true, .lo = $1}; }
    | ':' expr { $$ = (IndexArg){.span = @$, .slice = true, .hi = $2}; }
    | expr ':' expr { $$ = (IndexArg){.span = @$, .slice = true, .lo = $1, .hi = $3}; }
    ;

%%

/* How a token is named in messages: keywords and operators quoted ('param', '<-'), classes
 * of tokens by their class (identifier 'x', integer '128'). yysymbol_name gives bison's alias,
 * which may or may not carry quotes; both are handled. */
static void token_name(StrBuf *b, yysymbol_kind_t k) {
    const char *nm = yysymbol_name(k);
    size_t n = strlen(nm);
    if (n >= 2 && (nm[0] == '"' || nm[0] == '\'')) {
        nm++;
        n -= 2;
    }
    if (k == YYSYMBOL_IDENT || k == YYSYMBOL_INT || k == YYSYMBOL_FLOAT || k == YYSYMBOL_DTYPE || k == YYSYMBOL_STRING)
        sb_printf(b, "%s %.*s", strchr("aeiou", nm[0]) ? "an" : "a", (int)n, nm);
    else
        sb_printf(b, "'%.*s'", (int)n, nm);
}

/* "expected ';', found '}'"; at end of file, a note names the line where the open block began */
static int yyreport_syntax_error(const yypcontext_t *ctx, void *scanner, ParseCtx *pc) {
    (void)scanner;
    enum { NEXP = 6 };
    yysymbol_kind_t exp[NEXP];
    int n = yypcontext_expected_tokens(ctx, exp, NEXP);
    yysymbol_kind_t got = yypcontext_token(ctx);
    const Span *loc = yypcontext_location(ctx);
    StrBuf b;
    sb_init(&b);
    if (n > 0 && n < NEXP) {
        sb_puts(&b, "expected ");
        for (int i = 0; i < n; i++) {
            if (i) sb_puts(&b, i == n - 1 ? " or " : ", ");
            token_name(&b, exp[i]);
        }
        sb_puts(&b, ", found ");
    } else {
        sb_puts(&b, "unexpected ");
    }
    if (got == YYSYMBOL_YYEOF) {
        sb_puts(&b, "end of file");
    } else if (got == YYSYMBOL_IDENT || got == YYSYMBOL_INT || got == YYSYMBOL_FLOAT || got == YYSYMBOL_DTYPE) {
        token_name(&b, got);
        sb_printf(&b, " '%.*s'", (int)(loc->end - loc->begin), pc->text + loc->begin);
    } else {
        token_name(&b, got);
    }
    diag_error(pc->diag, *loc, "%s", b.s);
    sb_free(&b);
    if (got == YYSYMBOL_YYEOF && pc->open_braces.n > 0)
        diag_note(pc->diag, pc->open_braces.v[pc->open_braces.n - 1], "the block opened here is not closed");
    return 0;
}
