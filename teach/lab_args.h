// teach/lab_args.h: the command-line helpers ./lab's commands share (teach/lab_args.c): each
// option given at most once, strict integers and lists of numbers, --help, an unknown option
// named with the closest known one, the checks of --html FILE and --json, and writing a page.
// Bad arguments end the program with one line on stderr and exit code 2.
#ifndef LAB_ARGS_H
#define LAB_ARGS_H

#include "base/common.h"  // real
#include "report/html.h"  // HtmlPage

// The integer value of option opt: digits only ("0x10", " 5", "2.7" and "" are refused), in
// [lo, hi]; exit 2 naming opt otherwise.
long long parse_int(const char *opt, const char *v, long long lo, long long hi);
// The value of --NAME when argv[*i] is that option (--NAME=VALUE, or --NAME VALUE with *i then
// on the value), else NULL; exit 2 when the value is missing or the option is given twice.
const char *lab_option(int argc, char **argv, int *i, const char *name);
// Whether a is the switch NAME; exit 2 when it is given a second time.
int lab_switch(const char *a, const char *name);
// Whether a asks for help: --help or -h.
int is_help(const char *a);
// Exit 2 on an unknown option or argument a of command cmd, naming the closest of cmd's options.
_Noreturn void unknown_option(const char *cmd, const char *a);
// Parse "a,b,c" into out (at most max entries). Returns the count; dies with exit 2 on malformed
// lists: empty items, non-numbers, non-finite or huge values, too many entries.
int parse_list(const char *opt, const char *text, real *out, int max);
// The FILE of --html FILE: not empty; "-" is standard output (then the page is all it prints).
const char *html_path(const char *cmd, const char *v);
// Whether path is "-", standard output.
int is_stdout(const char *path);
// Exit 2 when --json and --html - would both print to standard output.
void check_one_stdout(const char *cmd, int json, const char *html);
// The command line as the page shows it: ./lab (or ./lab64) and the arguments, quoted where a
// shell would need it (a static buffer).
const char *command_line(int argc, char **argv);
// Write the page to path and free it; exit 1 naming the file when it cannot be written.
void write_page(HtmlPage *page, const char *path);

#endif
