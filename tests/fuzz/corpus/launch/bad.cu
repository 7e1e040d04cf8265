// kevo:launch k grid=(rows-1) block=(2048) args=(x, z)
