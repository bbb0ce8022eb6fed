#!/usr/bin/python3
"""sqlite3 and zipfile together: load rows, query, export a zip with fixed timestamps."""
import csv
import io
import sqlite3
import zipfile

con = sqlite3.connect("agent.db")
con.execute("create table if not exists m (id integer primary key, name text, score real)")
con.executemany("insert into m (name, score) values (?, ?)",
                [(f"n{i}", (i * 37 % 101) / 10) for i in range(500)])
con.commit()
rows = con.execute("select name, score from m where score > 9 order by score desc, name").fetchall()
print("top", rows[:5], len(rows))
buf = io.StringIO()
w = csv.writer(buf, lineterminator="\n")
w.writerows(rows)
with zipfile.ZipFile("export.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr(zipfile.ZipInfo("top.csv", date_time=(2024, 1, 1, 0, 0, 0)), buf.getvalue())
con.close()
with zipfile.ZipFile("export.zip") as z:
    print("zip", z.namelist(), len(z.read("top.csv")))
