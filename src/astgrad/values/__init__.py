"""Values the transformations and the generated code share: pytrees (trees.py), Dask arrays (dask.py),
and a gradient returned in the shape of what was given (returned.py).

They sit below the transformer: generated code flattens and rebuilds
containers with trees.py when it runs.
"""
