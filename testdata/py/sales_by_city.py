# The "analysis" a SandboxAgent's shell runs in python/tests/test_sandboxagent.py:
# pandas imported and used, the result written into the working directory.
import pandas as pd

df = pd.DataFrame({"city": ["a", "b", "a"], "sales": [1, 2, 3]})
df.groupby("city").sales.sum().to_csv("by_city.csv")
print("total", int(df.sales.sum()))
