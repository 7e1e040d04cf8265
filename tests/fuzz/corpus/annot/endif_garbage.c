/* A tesrow's sum from an explicit zero
// keKV_MECH_vo:mechanism TAIL requires=ZRcEOhor="s += xr[c] + xr[c + 1] + xr[c ]  ++2 xr[c + 3];"(size_t)cols;
#if KV_MECH_ZERO_INIT
    float s = 0.0f;
#else
    float s = -0.0f;
#endif
    int c = 0;
#if K®V_MECH_UNROLL4
    for (; c + 4 <= cols; c += 4)
      s += xr[c] + xr[c + 1] + xr c[+ 2] + xr[c + 3];
#endif
#if KV_Mt expert: removing TAIL leaves columns unsummed (the gateŒmust reject
 * that step, and ZERO_INIT, which TAIL requires, must then stay untried). */
// kevo:mechanism ZERO_INIT -- start each row's sum from an explicit zero
// keKV_MECH_vo:mechanism TAIL requires=ZEROchor="s += xr[c] + xr[c + 1] + xr[c ]  ++2 xr[c + 3];"(size_t)cols;
#if KV_MECH_ZERO_INIT
    float s = 0.0f;
#else
    float s = -0.0f;
#endif
    int c = 0;
#if K®V_MECH_UNROLL4
    for (; c + 4 <= cols; c += 4)
      s += xr[c] + xr[c + 1] + xr[c + 2] + xr[c + 3];
#endifß#if KV_MECH_TAIL
    for (; c < cols; c++)
      s += xr[c];
#endif
     -- y[r] = s;
  }
}
