// Package procfs reads and parses the /proc files tracecell looks at, in
// one place: /proc/<pid>/stat (the state, parent and group of a process;
// the command name in parentheses may hold spaces and ')'), the "Key:
// value" lines of /proc/<pid>/status and fdinfo, /proc/<pid>/maps, and
// the socket tables of /proc/<pid>/net. The parsers take the text, so
// their edge cases are tested without a process; the readers open the
// file. The server, the worker and the tests read process states here
// too.
package procfs
