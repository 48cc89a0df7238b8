"""Dump the argparse parser of SGLang's ServerArgs.add_cli_args for one release (sources unpacked
under $SGLANG_SOURCES/sglang-<v>/, each an unzipped wheel), stubbing every third-party module it imports."""
import sys, importlib.abc, importlib.machinery, types, json, argparse, inspect

src = sys.argv[1]
sys.path.insert(0, src)

BLOCK={'npu','musa','hpu','mlu','__path__','__file__','__spec__','__loader__','__wrapped__','__all__','__origin__','__args__','__parameters__','__signature__','__annotations__','__dataclass_fields__','__get__','__set_name__','__set__','__delete__','__len__','__fspath__','__await__','__enter__','__exit__','__next__','__contains__','__code__','__globals__','__defaults__','__kwdefaults__','__qualname__','__module__','__dict__','__struct_fields__','__class_getitem__','__init_subclass__','__prepare__','__instancecheck__','__subclasscheck__','__float__','__complex__','__bytes__','__reduce__','__reduce_ex__','__getstate__','__copy__','__deepcopy__','__doc__','__name__'}
class Stub(types.ModuleType):
    def __getattr__(self, name):
        if name == '__version__': return '2.9.0'
        if name in BLOCK:
            raise AttributeError(name)
        return StubObj(f"{self.__name__}.{name}")

import abc
class StubMeta(abc.ABCMeta):
    def __getattr__(cls, name):
        if name in BLOCK: raise AttributeError(name)
        return StubObj(name)
CLASSES={}
class StubObj(str):
    def __new__(cls, name):
        o = str.__new__(cls, name.split('.')[-1]); o._n = name; return o
    def __getattr__(self, name):
        if name in BLOCK:
            raise AttributeError(name)
        return StubObj(f"{self._n}.{name}")
    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k and not self._n.endswith('dumps'): return a[0]
        return StubObj(self._n + "()")
    def __mro_entries__(self, bases):
        return (CLASSES.setdefault(self._n, StubMeta(self._n.split('.')[-1], (), {'__getattr__': lambda s, n: StubObj(n), '__init_subclass__': classmethod(lambda c, **k: None)})),)
    def __iter__(self): return iter(())
    def __bool__(self): return False
    def __or__(self, o): return self
    def __ror__(self, o): return self
    def __getitem__(self, k): return self
    def __setitem__(self, k, v): pass
    def __delitem__(self, k): pass
    def __eq__(self, o): return False
    def __hash__(self): return hash(self._n)
    def __lt__(self, o): return False
    def __gt__(self, o): return True
    def __le__(self, o): return False
    def __ge__(self, o): return True
    def __int__(self): return 0
    def __index__(self): return 0
    def __repr__(self): return self._n
    def __str__(self): return str.__str__(self)

ALLOW = {'sglang', 'msgspec'}
class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        top = name.split('.')[0]
        if top in ALLOW or top in sys.stdlib_module_names:
            return None
        return importlib.machinery.ModuleSpec(name, self, is_package=True)
    def create_module(self, spec):
        m = Stub(spec.name); m.__path__ = []; return m
    def exec_module(self, m): pass
sys.meta_path.insert(0, Finder())

from sglang.srt.server_args import ServerArgs
parser = argparse.ArgumentParser(prog="sglang serve")
ServerArgs.add_cli_args(parser)
out = []
for a in parser._actions:
    if isinstance(a, argparse._HelpAction): continue
    t = a.type
    tname = getattr(t, '__name__', repr(t)) if t is not None else None
    out.append(dict(opts=a.option_strings, dest=a.dest, action=type(a).__name__, nargs=a.nargs,
                    type=tname, choices=sorted(map(str, a.choices)) if a.choices is not None else None,
                    default=repr(a.default)[:80], const=repr(a.const)[:40]))
print(json.dumps(out, indent=0))
