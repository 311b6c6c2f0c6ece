"""Values the transformations and the generated code share: pytrees (trees.py) and Dask arrays (dask.py).

They sit below the transformer: generated code flattens and rebuilds
containers with trees.py when it runs.
"""
