# Shell tools in the sandbox DIR (see measure.py and syscalls.IoctlAllowed):
# bash -c with a pipe, ls, the sqlite3 shell, git init/add/commit/status.
set -e
d=$1
bash -c 'echo hi | cat; x=$(ls); echo "$x" >/dev/null'
ls -l --color=auto "$d" >/dev/null; ls "$d"
sqlite3 "$d/c.db" 'create table t(x); insert into t values(1); select * from t;'
cd "$d" && rm -rf repo && mkdir repo && cd repo && git init -q && echo a > a && git add a && git -c user.name=x -c user.email=x@y commit -qm m && git status && git log --oneline >/dev/null
