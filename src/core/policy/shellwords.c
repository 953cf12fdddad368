/* SPDX-License-Identifier: MIT */
#include "core/policy/shellwords.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"

struct parser {
	const char *p, *end;
	struct shell_script *s;
	char *word;
	size_t word_len, word_cap;
	bool in_word;
	bool drop_next_word; /* a redirection's target: not an argument */
	char **argv;
	size_t argc;
	char **assignments;
	size_t words;
	int error;
};

static void not_plain(struct parser *ps, const char *why)
{
	if (!ps->s->plain)
		return;
	ps->s->plain = false;
	snprintf(ps->s->unparsed, sizeof(ps->s->unparsed), "%s", why);
}

static void word_add(struct parser *ps, char c)
{
	if (ps->word_len + 2 > ps->word_cap) {
		size_t cap = ps->word_cap ? 2 * ps->word_cap : 32;
		char *w = realloc(ps->word, cap);
		if (!w) {
			ps->error = -ENOMEM;
			return;
		}
		ps->word = w;
		ps->word_cap = cap;
	}
	ps->word[ps->word_len++] = c;
	ps->in_word = true;
}

static bool is_assignment(const char *w)
{
	const char *eq = strchr(w, '=');

	if (!eq || eq == w || (w[0] >= '0' && w[0] <= '9'))
		return false;
	for (const char *c = w; c < eq; c++)
		if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9')))
			return false;
	return true;
}

static void word_end(struct parser *ps)
{
	if (!ps->in_word || ps->error)
		return;
	if (!ps->word) { /* an empty word: '' or a substitution alone */
		word_add(ps, '\0');
		ps->word_len = 0;
		if (ps->error)
			return;
	}
	ps->word[ps->word_len] = '\0';
	ps->in_word = false;
	ps->word_len = 0;
	if (ps->drop_next_word) {
		ps->drop_next_word = false;
		return;
	}
	if (++ps->words > SHELL_MAX_WORDS) {
		ps->error = -E2BIG;
		return;
	}
	bool assignment = ps->argc == 0 && is_assignment(ps->word);
	char *w = strdup(ps->word);
	/* FOO=bar cmd: cmd's environment, kept for the caller to judge. */
	if (!w || strv_consume(assignment ? &ps->assignments : &ps->argv, w) < 0) {
		ps->error = -ENOMEM;
		return;
	}
	if (!assignment)
		ps->argc++;
}

static void command_end(struct parser *ps, enum shell_op op)
{
	word_end(ps);
	if (ps->error)
		return;
	if (ps->drop_next_word) {
		not_plain(ps, "redirection without a target");
		ps->drop_next_word = false;
	}
	if (ps->argc == 0) {
		if (ps->assignments) /* FOO=bar alone changes the shell's own state */
			not_plain(ps, "assignment");
		else if (op != SHELL_OP_SEQ && op != SHELL_OP_END)
			not_plain(ps, "operator without a command");
		strv_free(ps->assignments);
		ps->assignments = NULL;
		return;
	}
	struct shell_script *s = ps->s;
	if (s->n_commands == SHELL_MAX_COMMANDS) {
		ps->error = -E2BIG;
		return;
	}
	struct shell_command *c = realloc(s->commands, (s->n_commands + 1) * sizeof(*c));
	if (!c) {
		ps->error = -ENOMEM;
		return;
	}
	s->commands = c;
	c[s->n_commands++] = (struct shell_command){ .argv = ps->argv,
						     .assignments = ps->assignments,
						     .op_after = op };
	ps->argv = NULL;
	ps->assignments = NULL;
	ps->argc = 0;
}

/* Skips a balanced $( ... ) or <( ... ); *p is at the opening parenthesis. */
static void skip_parens(struct parser *ps)
{
	int depth = 0;

	for (; ps->p < ps->end; ps->p++) {
		if (*ps->p == '(')
			depth++;
		else if (*ps->p == ')' && --depth == 0) {
			ps->p++;
			return;
		}
	}
	not_plain(ps, "unterminated substitution");
}

static void single_quoted(struct parser *ps)
{
	ps->p++;
	ps->in_word = true;
	while (ps->p < ps->end && *ps->p != '\'')
		word_add(ps, *ps->p++);
	if (ps->p == ps->end) {
		not_plain(ps, "unterminated quote");
		return;
	}
	ps->p++;
}

static void double_quoted(struct parser *ps)
{
	ps->p++;
	ps->in_word = true;
	while (ps->p < ps->end && *ps->p != '"') {
		char c = *ps->p++;
		if (c == '\\' && ps->p < ps->end && strchr("$`\"\\\n", *ps->p)) {
			c = *ps->p++;
			if (c == '\n')
				continue;
		} else if (c == '$' || c == '`') {
			not_plain(ps, "expansion");
		}
		word_add(ps, c);
	}
	if (ps->p == ps->end) {
		not_plain(ps, "unterminated quote");
		return;
	}
	ps->p++;
}

static bool word_is_fd_number(const struct parser *ps)
{
	if (!ps->in_word || ps->word_len == 0)
		return false;
	for (size_t i = 0; i < ps->word_len; i++)
		if (ps->word[i] < '0' || ps->word[i] > '9')
			return false;
	return true;
}

static void redirection(struct parser *ps)
{
	not_plain(ps, "redirection");
	if (word_is_fd_number(ps)) { /* 2>file: the 2 is not an argument */
		ps->in_word = false;
		ps->word_len = 0;
	} else {
		word_end(ps);
	}
	char first = *ps->p++;
	if (first == '<' && ps->p < ps->end && *ps->p == '(') {
		skip_parens(ps);
		return;
	}
	if (first == '&') /* &> and &>> */
		ps->p++;
	if (ps->p < ps->end && (*ps->p == '>' || *ps->p == '<' || *ps->p == '|'))
		ps->p++;
	if (ps->p < ps->end && *ps->p == '&') /* >&2, <&0, >&- */
		ps->p++;
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
		ps->p++;
	ps->drop_next_word = true;
}

/* parse(): c, when it separates words or commands or redirects; false
 * when it is none of those. */
static bool parse_operator(struct parser *ps, char c, char next)
{
	switch (c) {
	case ' ':
	case '\t':
		word_end(ps);
		ps->p++;
		break;
	case '\n':
	case ';':
		if (c == ';' && next == ';')
			not_plain(ps, "case clause");
		command_end(ps, SHELL_OP_SEQ);
		ps->p++;
		break;
	case '&':
		if (next == '>') {
			redirection(ps);
		} else if (next == '&') {
			command_end(ps, SHELL_OP_AND);
			ps->p += 2;
		} else {
			command_end(ps, SHELL_OP_BACKGROUND);
			ps->p++;
		}
		break;
	case '|':
		command_end(ps, next == '|' ? SHELL_OP_OR : SHELL_OP_PIPE);
		ps->p += next == '|' || next == '&' ? 2 : 1;
		break;
	case '>':
	case '<':
		redirection(ps);
		break;
	case '(':
	case ')':
		not_plain(ps, "subshell");
		word_end(ps);
		ps->p++;
		break;
	default:
		return false;
	}
	return true;
}

/* parse(): c, a character of a word; those a shell would expand or refuse
 * make the script not plain. */
static void parse_word_char(struct parser *ps, char c)
{
	if (c == '*' || c == '?' || c == '[')
		not_plain(ps, "glob");
	else if (c == '{' || c == '}')
		not_plain(ps, "brace");
	else if (c == '~' && !ps->in_word)
		not_plain(ps, "tilde");
	else if ((unsigned char)c < 0x20 || c == 0x7f)
		not_plain(ps, "control character");
	else if ((unsigned char)c >= 0x80)
		not_plain(ps, "non-ASCII byte");
	word_add(ps, c);
	ps->p++;
}

static void parse(struct parser *ps)
{
	while (ps->p < ps->end && !ps->error) {
		char c = *ps->p;
		char next = ps->p + 1 < ps->end ? ps->p[1] : '\0';
		if (parse_operator(ps, c, next))
			continue;
		switch (c) {
		case '`':
			not_plain(ps, "substitution");
			ps->p++;
			while (ps->p < ps->end && *ps->p != '`')
				ps->p++;
			if (ps->p < ps->end)
				ps->p++;
			ps->in_word = true; /* its output would be (part of) a word */
			break;
		case '$':
			not_plain(ps, "expansion");
			if (next == '(') {
				ps->p++;
				skip_parens(ps);
				ps->in_word = true;
			} else {
				word_add(ps, c);
				ps->p++;
			}
			break;
		case '\'':
			single_quoted(ps);
			break;
		case '"':
			double_quoted(ps);
			break;
		case '\\':
			not_plain(ps, "escape");
			ps->p++;
			if (ps->p < ps->end) {
				if (*ps->p != '\n')
					word_add(ps, *ps->p);
				ps->p++;
			}
			break;
		case '#':
			if (ps->in_word) {
				word_add(ps, c);
				ps->p++;
				break;
			}
			not_plain(ps, "comment");
			while (ps->p < ps->end && *ps->p != '\n')
				ps->p++;
			break;
		default:
			parse_word_char(ps, c);
			break;
		}
	}
}

int shell_script_parse(const char *text, size_t n, struct shell_script *ret)
{
	*ret = (struct shell_script){ .plain = true };
	if (n > SHELL_MAX_BYTES) {
		not_plain(&(struct parser){ .s = ret }, "too long");
		return -E2BIG;
	}
	struct parser ps = { .p = text, .end = text + n, .s = ret };
	parse(&ps);
	if (!ps.error) {
		size_t before = ret->n_commands;
		bool dangling = ret->n_commands > 0 &&
				ret->commands[ret->n_commands - 1].op_after != SHELL_OP_SEQ &&
				ret->commands[ret->n_commands - 1].op_after != SHELL_OP_BACKGROUND;
		command_end(&ps, SHELL_OP_END);
		if (ret->n_commands == before && dangling)
			not_plain(&ps, "incomplete command");
	}
	if (memchr(text, '\0', n))
		not_plain(&ps, "NUL byte");
	free(ps.word);
	strv_free(ps.argv);
	strv_free(ps.assignments);
	return ps.error;
}

void shell_script_release(struct shell_script *s)
{
	for (size_t i = 0; i < s->n_commands; i++) {
		strv_free(s->commands[i].argv);
		strv_free(s->commands[i].assignments);
	}
	free(s->commands);
	*s = (struct shell_script){ 0 };
}

unsigned shell_script_masking(const struct shell_script *s)
{
	unsigned mask = s->plain ? 0 : SHELL_MASK_UNPARSED;

	for (size_t i = 0; i < s->n_commands; i++) {
		switch (s->commands[i].op_after) {
		case SHELL_OP_PIPE:
			mask |= SHELL_MASK_PIPE;
			break;
		case SHELL_OP_OR:
			mask |= SHELL_MASK_OR;
			break;
		case SHELL_OP_SEQ:
			if (i + 1 < s->n_commands)
				mask |= SHELL_MASK_SEQUENCE;
			break;
		case SHELL_OP_BACKGROUND:
			mask |= SHELL_MASK_BACKGROUND;
			break;
		case SHELL_OP_AND:
		case SHELL_OP_END:
			break;
		}
	}
	return mask;
}

const char *shell_mask_to_string(unsigned bit)
{
	switch (bit) {
	case SHELL_MASK_PIPE:
		return "pipe";
	case SHELL_MASK_OR:
		return "or";
	case SHELL_MASK_SEQUENCE:
		return "sequence";
	case SHELL_MASK_BACKGROUND:
		return "background";
	case SHELL_MASK_UNPARSED:
		return "unparsed";
	default:
		return "unknown";
	}
}
