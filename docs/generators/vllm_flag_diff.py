import json, os, sys
DUMPS = os.environ.get('VLLM_FLAG_DUMPS', 'dumps')
def names(v):
    d=json.load(open(f'{DUMPS}/v{v}.json'))
    s={}
    for x in d:
        ns=[n for n in x['names'] if n.startswith('-')]
        if not ns: continue
        l=[n for n in ns if n.startswith('--')]
        key=l[0] if l else ns[0]
        s[key]=x
    return s
def sig(x):
    return (x.get('explicit'), x.get('expanded') if not x.get('frontend') else x.get('annotation'), sorted(x['names']))
pairs=[a.split(':') for a in sys.argv[1:]]
for a,b in pairs:
    A=names(a);B=names(b)
    add=sorted(set(B)-set(A)); rem=sorted(set(A)-set(B))
    ch=[k for k in B if k in A and sig(A[k])!=sig(B[k])]
    print(f"{a}->{b}: +{add} -{rem}")
    for k in ch: print("   changed",k, sig(A[k]), '=>', sig(B[k]))
