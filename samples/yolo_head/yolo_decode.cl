// YoloDecode: YOLOv5's box decode of one level's sigmoid outputs, BFYX, channel
// f = anchor * per + k with per = F / number of anchors. Channels 0 and 1 become the box
// centre in pixels, (2s - 0.5 + cell) * STRIDE; 2 and 3 its size, (2s)^2 * the anchor's;
// objectness and classes pass through. One work-item per element (yolo_decode.xml).
__kernel void yolo_decode(const __global INPUT0_TYPE* input, __global OUTPUT0_TYPE* output)
{
    const int x = get_global_id(0);
    const int y = get_global_id(1);
    const int bf = get_global_id(2);
    const int f = bf % OUTPUT0_DIMS[1];
    const int b = bf / OUTPUT0_DIMS[1];
    const int anchors = sizeof(ANCHORS) / sizeof(ANCHORS[0]) / 2;
    const int per = OUTPUT0_DIMS[1] / anchors;
    const int a = f / per;
    const int k = f % per;
    const float s = input[b * INPUT0_PITCHES[0] + f * INPUT0_PITCHES[1] + y * INPUT0_PITCHES[2] + x * INPUT0_PITCHES[3] + INPUT0_OFFSET];
    float v = s;
    if (k == 0)
        v = (2.0f * s - 0.5f + x) * STRIDE;
    else if (k == 1)
        v = (2.0f * s - 0.5f + y) * STRIDE;
    else if (k < 4)
        v = (2.0f * s) * (2.0f * s) * ANCHORS[2 * a + k - 2];
    output[b * OUTPUT0_PITCHES[0] + f * OUTPUT0_PITCHES[1] + y * OUTPUT0_PITCHES[2] + x * OUTPUT0_PITCHES[3] + OUTPUT0_OFFSET] = v;
}
