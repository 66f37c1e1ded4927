# The interpreter's own answer to "where is module X", without importing X or a parent:
# each finder on sys.meta_path asked one package level at a time (what provgate ran as root
# before it resolved modules by reading files). Tests run it, as the owner of the venv, to
# check that provgate's file-reading answer is the same. Prints OK<TAB>path or ERR<TAB>why.
import sys
name = sys.argv[1]
parts = name.split('.')
if not all(p.isidentifier() for p in parts):
    print('ERR\t%r is not a dotted module name' % name); sys.exit(3)
path = None
spec = None
for i in range(len(parts)):
    full = '.'.join(parts[:i + 1])
    spec = None
    for finder in sys.meta_path:
        find = getattr(finder, 'find_spec', None)
        if find is None:
            continue
        spec = find(full, path)
        if spec is not None:
            break
    if spec is None:
        where = 'sys.path' if path is None else list(path)
        print('ERR\tNo module named %r (searched %s with %s)' % (full, where, sys.executable))
        sys.exit(2)
    if i < len(parts) - 1:
        path = spec.submodule_search_locations
        if path is None:
            print('ERR\t%r is a module, not a package, so it has no %r' % (full, parts[i + 1]))
            sys.exit(2)
if not spec.has_location or not spec.origin:
    print('ERR\t%r has no file (origin %r)' % (name, spec.origin)); sys.exit(2)
print('OK\t' + spec.origin)
