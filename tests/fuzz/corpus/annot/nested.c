// kevo:mechanism A requires=B -- a
// kevo:mechanism B -- b
#if KV_MECH_A && !KV_MECH_B
#ifdef X
#else
#endif
#else
#endif
#if KV_MECH_B
#endif
