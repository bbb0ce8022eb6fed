// execflood: N refused execs of one program, each spelled differently and
// about 4 KB long, as one endless "PATH search" would look to a notice
// printer that groups the tries of a search (report.ExecWalks).
//
//   execflood PROGRAM N
//
// PROGRAM is an absolute path such as /usr/bin/ls, exec'd as
// "/usr/" + "./" * a + "/" * (b + 1) + "./" * pad + "bin/ls" for try
// i = 1000 * b + a, so no two tries share a spelling. Prints
//   result: execflood tries=N refused=R
// where refused counts the execs that failed with EACCES or EPERM.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc != 3 || argv[1][0] != '/') {
		fprintf(stderr, "usage: execflood /ABSOLUTE/PROGRAM N\n");
		return 2;
	}
	const char *prog = argv[1] + 1; // without its leading slash
	long n = atol(argv[2]);
	static char path[4096];
	long refused = 0;
	for (long i = 0; i < n; i++) {
		long a = i % 1000, b = i / 1000;
		size_t len = 0;
		path[len++] = '/';
		for (long k = 0; k < a; k++) {
			path[len++] = '.';
			path[len++] = '/';
		}
		for (long k = 0; k <= b && len < 3000; k++)
			path[len++] = '/';
		while (len + strlen(prog) + 3 < 3900) {
			path[len++] = '.';
			path[len++] = '/';
		}
		strcpy(path + len, prog);
		char *args[] = {path, NULL};
		execv(path, args);
		if (errno == EACCES || errno == EPERM)
			refused++;
	}
	printf("result: execflood tries=%ld refused=%ld\n", n, refused);
	return 0;
}
