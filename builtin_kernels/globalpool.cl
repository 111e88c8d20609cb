// GlobalAveragePool and GlobalMaxPool: one work-item reduces one N,C plane of `size`
// values. Shapes are arguments, so one program serves every shape.
//   global = (planes)

__kernel void global_avgpool(__global const float* restrict x, int x_off, __global float* restrict y, int y_off,
                             int planes, int size)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= planes) {
        return;
    }
    const __global float* p = x + (size_t)i * size;
    float s = 0.0f;
    for (int j = 0; j < size; j++) {
        s += p[j];
    }
    y[i] = s / (float)size;
}

__kernel void global_maxpool(__global const float* restrict x, int x_off, __global float* restrict y, int y_off,
                             int planes, int size)
{
    x += x_off;
    y += y_off;
    const int i = get_global_id(0);
    if (i >= planes) {
        return;
    }
    const __global float* p = x + (size_t)i * size;
    float v = -INFINITY;
    for (int j = 0; j < size; j++) {
        v = fmax(v, p[j]);
    }
    y[i] = v;
}
