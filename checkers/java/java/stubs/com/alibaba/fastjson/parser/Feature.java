package com.alibaba.fastjson.parser;
public enum Feature { AutoCloseSource }
