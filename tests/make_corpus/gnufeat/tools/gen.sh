#!/bin/sh
echo "stamp $1, $2 programs"
